package protocol

// knobs are the package's test seams, one unexported struct in the manner
// of pebble's Options.private (carried in Config.private): set only by
// this package's tests; the zero value is what production runs. Each
// switches a rule off for a negative control or picks the slower path a
// benchmark compares with.
type knobs struct {
	// setupInAcceptLoop runs TLS handshakes in the accept loop, one at a
	// time: the seam for the negative control of
	// TestStalledHandshakesDoNotBlockAccept.
	setupInAcceptLoop bool

	// pipelineBytes is the per-connection byte budget (see
	// defaultPipelineBytes); 0 is the default, negative is unbounded: the
	// seam for the negative control in the slow-reader test.
	pipelineBytes int64
	// reuseFrameBeforeHandle returns a pooled Produce frame to the pool
	// as soon as it is decoded, while its request still aliases it: the
	// seam for the negative control of TestProduceFrameReusedAfterHandle.
	reuseFrameBeforeHandle bool
	// copyFileRecords declines sendfile(2) (Request.SendsFiles is false):
	// the seam for comparing it with the copying path.
	copyFileRecords bool
	// preallocateFrames allocates a frame's whole declared size before
	// its bytes arrive, instead of growing it as they are read: the seam
	// for the negative control of TestStalledFramesHoldTheirBytes.
	preallocateFrames bool
	// noThrottleMute ignores Request.Throttle: the seam for the negative
	// control of TestThrottleMutesConnection.
	noThrottleMute bool
	// noPreAuthSteps lets the reader read the next frame before a request
	// sent before authentication is handled: the seam for the negative
	// control of TestBareTokenAfterPipelinedHandshake.
	noPreAuthSteps bool
}
