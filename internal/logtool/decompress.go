package logtool

// DefaultMaxDecompressedBytes bounds what one batch may inflate to
// (batch.Inflate), so a crafted or damaged batch in a file the tools are
// pointed at cannot exhaust memory. It is above the log's own bound
// (64 MiB, for batches the broker accepted) because the tools also read
// Kafka's files, whose batches may be larger.
const DefaultMaxDecompressedBytes = 256 << 20
