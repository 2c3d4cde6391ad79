"""Generated codecs for amqp-0-10."""
