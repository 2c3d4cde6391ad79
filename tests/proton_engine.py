"""An AMQP 1.0 conversation made by qpid-proton's engine alone, in memory: no server, no socket.

A client and a server `proton.Transport` are pumped into each other and every byte each side
writes is kept, so the tests get both directions of a real peer's connection (SASL ANONYMOUS,
open, begin, attach, flow, transfers, dispositions, close) in a few milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import proton
from proton import SASL, Collector, Connection, Event, Transport


@dataclass
class Conversation:
    c2s: bytearray = field(default_factory=bytearray)
    s2c: bytearray = field(default_factory=bytearray)
    bodies: list[object] = field(default_factory=list)  # what the client sent, in order
    received: int = 0  # messages the server side read whole


def converse(messages: int = 300) -> Conversation:
    """`messages` transfers from client to server, each accepted and settled by the server."""
    conv = Conversation()
    client, server = Transport(), Transport(Transport.SERVER)
    for t in (client, server):
        SASL(t).allowed_mechs("ANONYMOUS")
    cconn, sconn = Connection(), Connection()
    cconn.container, cconn.hostname, sconn.container = "client", "localhost", "server"
    client.bind(cconn)
    server.bind(sconn)
    events = Collector()
    sconn.collect(events)

    def serve(e: Event) -> None:
        if e.type == Event.SESSION_REMOTE_OPEN:
            e.session.open()
        elif e.type == Event.LINK_REMOTE_OPEN:
            e.link.target.copy(e.link.remote_target)
            e.link.open()
            if e.link.is_receiver:
                e.link.flow(messages)
        elif e.type == Event.DELIVERY and e.link.is_receiver:
            # the event names one delivery, but every whole one now at the link's head is read
            link = e.link
            while link.current is not None and link.current.readable and not link.current.partial:
                delivery = link.current
                link.recv(delivery.pending)
                delivery.update(proton.Delivery.ACCEPTED)
                link.advance()  # before settling: settling the current delivery advances too
                delivery.settle()
                conv.received += 1

    def pump() -> None:
        while True:
            moved = 0
            for src, dst, kept in ((client, server, conv.c2s), (server, client, conv.s2c)):
                n = min(src.pending(), dst.capacity())
                if n > 0:
                    data = src.peek(n)
                    src.pop(n)
                    kept += data
                    dst.push(data)
                    moved += n
            while events.peek():
                serve(events.peek())
                events.pop()
            if not moved:
                return

    cconn.open()
    pump()
    sconn.open()
    session = cconn.session()
    session.open()
    sender = session.sender("orders")
    sender.target.address = "orders"
    sender.open()
    pump()
    for i in range(messages):
        body: object = "x" * (i * 7) if i % 3 else b"\x00" * (i * 31)
        conv.bodies.append(body)
        sender.delivery(b"tag-%d" % i)
        sender.send(proton.Message(body=body, id=i, properties={"i": i}).encode())
        sender.advance()
        if i % 50 == 49:
            pump()
    pump()
    cconn.close()
    pump()
    sconn.close()
    pump()
    return conv
