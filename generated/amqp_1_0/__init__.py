"""Generated codecs for amqp-1-0."""
