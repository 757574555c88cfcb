package kernels

// DecodeLayer is one decoder layer of a bf16 decode step (DecodeLayerBF16): T rows, each a short
// input's token as AttentionDecode takes them, shapes C (hidden), I (intermediate), NH, NKV, HD.
type DecodeLayer struct {
	T, C, I, NH, NKV, HD int
	Eps, Scale           float32
	// X [T,C] is the layer's input and becomes its output; Mid [T,C] the residual after
	// attention; Q, K, V, QRaw, KRaw, Att, Gate, Up its activations (QRaw and KRaw the zero Buf
	// without q_norm/k_norm); Rope [T,HD] the rows' RoPE angles (RoPETable).
	X, Mid, Q, K, V, QRaw, KRaw, Att, Gate, Up, Rope Buf
	InNorm, PostNorm, QNorm, KNorm                   Buf // fp32
	BQ, BK, BV, BO                                   Buf // fp32 biases, or the zero Buf
	WQ, WK, WV, WO, WGate, WUp, WDown                Buf // packed bf16 weights (PackLinearBF16)
	// AttentionDecode's cache arguments for this layer, one entry per row.
	KCaches, VCaches, KTiles []Buf
	KVLens, Shared           []int32
}
