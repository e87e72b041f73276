//! Browser I/O: byte sources over `File.slice()` blobs, feeding the engine's decoders.
