package recordlog

// knobs are the package's test seams, one unexported struct in the manner
// of pebble's Options.private: carried in Options.private (the writer's
// rules) and Format.private (skipCRC: ReadFrame has only the Format); set
// only by this package's negative-control tests; the zero value is what
// production runs.
type knobs struct {
	// skipCRC: a frame whose CRC does not match is read as valid (read
	// from Format.private).
	skipCRC bool
	// skipSync: Wait counts records durable without an fsync.
	skipSync bool
	// skipRecordBound: Append, AppendFrames and Rewrite write a frame
	// longer than Format.MaxRecord.
	skipRecordBound bool
	// skipTruncate: Open leaves a torn tail in the file.
	skipTruncate bool
}
