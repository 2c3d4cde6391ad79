"""Generated codecs for AMQP 0-10."""
