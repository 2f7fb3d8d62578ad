"""What several test files share (pytest puts ``tests/`` on ``sys.path``: ``from helpers.records import record``),
by topic, so that no test module imports another: records and result sets, the tiny language model and its
configs, INT8's trained digits and what a quantized model reads back as, the Torch-TensorRT and ModelOpt fakes and
wheel readers, the command line, and the served sleeper with its queue model."""
