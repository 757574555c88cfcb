// Package bench runs gorstar's model benchmarks as a caller would want them whole: training steps
// timed against SGEMM on the step's own shapes (Train), generation with the engine over a range of
// batches (Generate), each optionally beside the PyTorch reference of this directory
// (qwen3_torch.py) on the same weights, shapes and threads (Torch). `gorstar model bench` is a
// thin command over it; the measuring loops themselves live in model (BenchmarkTrainEach,
// SGEMMRef) and engine (Bench).
package bench
