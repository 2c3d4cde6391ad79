"""Generated codecs for amqp-fast-0-8."""
