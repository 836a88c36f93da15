"""The cat-subset model language: parser, interpreter, and the algebras it evaluates over."""
