"""Generated codecs for rabbitmq-stream."""
