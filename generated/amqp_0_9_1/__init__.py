"""Generated codecs for amqp-0-9-1."""
