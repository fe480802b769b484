"""The request path: retrieve, gate, assemble, check conflicts, compress, generate, parse, verify, answer."""
