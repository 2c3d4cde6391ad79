"""Generated codecs for AMQP 1.0."""
