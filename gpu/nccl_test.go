package gpu

import (
	"strings"
	"testing"

	"gorstar/dist"
	"gorstar/kernels"
)

// The collectives' plumbing against fake NCCL libraries (no GPU): the unique id, the error text,
// and the data types, counts and roots each call passes (the fake refuses any other).
func TestCollectiveComm(t *testing.T) {
	boot := (*dist.World)(nil).Collectives()
	d := &Device{Vendor: VendorCUDA, dry: true}
	names := tableNames(t, "GK_NCCL_SYMS")
	t.Run("absent", func(t *testing.T) {
		dir := t.TempDir()
		useSearch(t, dir)
		_, err := NewCollectiveComm(d, boot, 0, 1)
		if err == nil || !strings.HasPrefix(err.Error(), "gpu: NCCL not found (tried "+dir+"/libnccl.so.2") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("init fails", func(t *testing.T) {
		dir := t.TempDir()
		useSearch(t, dir)
		fakeLibrary(t, dir, "libnccl.so.2", names, map[string]string{
			"ncclCommInitRank":   "typedef struct { char b[128]; } uid_fake; int ncclCommInitRank(void **c, int n, uid_fake id, int r) { return 2; }",
			"ncclGetErrorString": `const char *ncclGetErrorString(int e) { return "unhandled system error"; }`,
		})
		_, err := NewCollectiveComm(d, boot, 0, 1)
		if want := "gpu: NCCL: ncclCommInitRank: error 2: unhandled system error"; err == nil || err.Error() != want {
			t.Fatalf("%v\nwant %s", err, want)
		}
	})
	t.Run("calls", func(t *testing.T) {
		dir := t.TempDir()
		useSearch(t, dir)
		fakeLibrary(t, dir, "libnccl.so.2", names, map[string]string{
			"ncclGetUniqueId": "typedef struct { char b[128]; } uid_fake; int ncclGetUniqueId(uid_fake *id) { for (int i = 0; i < 128; i++) id->b[i] = i; return 0; }",
			// The id rank 0 made must arrive whole; one rank, rank 0.
			"ncclCommInitRank": "int ncclCommInitRank(void **c, int n, uid_fake id, int r) { if (n != 1 || r != 0 || id.b[127] != 127 || id.b[5] != 5) return 4; *c = (void *)8; return 0; }",
			"ncclAllReduce":    "int ncclAllReduce(const void *s, void *r, unsigned long n, int dt, int op, void *c, void *st) { return s == r && op == 0 && ((n == 3 && dt == 7) || (n == 2 && dt == 8) || (n == 6 && dt == 7)) && c == (void *)8 ? 0 : 4; }",
			"ncclBroadcast":    "int ncclBroadcast(const void *s, void *r, unsigned long n, int dt, int root, void *c, void *st) { return n == 5 && dt == 1 && root == 0 ? 0 : 4; }",
		})
		c, err := NewCollectiveComm(d, boot, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		// A device buffer goes to NCCL where it is: nothing staged.
		grads := toKernels(d.Alloc(6, kernels.F32))
		if err := c.AllReduceDeviceF32(grads); err != nil {
			t.Fatal(err)
		}
		if !c.stage.IsNil() {
			t.Fatal("a device buffer's all-reduce was staged")
		}
		if err := c.AllReduceDeviceF32(toKernels(d.Alloc(6, kernels.BF16))); err == nil || !strings.Contains(err.Error(), "want float32") {
			t.Fatalf("all-reduce of a bf16 device buffer: %v", err)
		}
		if err := c.AllReduceF32([]float32{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		if err := c.AllReduceF64([]float64{1, 2}); err != nil {
			t.Fatal(err)
		}
		if err := c.Broadcast([]byte("hello"), 0); err != nil {
			t.Fatal(err)
		}
		if err := c.Broadcast([]byte("hello"), 1); err == nil || !strings.HasPrefix(err.Error(), "gpu: NCCL: ncclBroadcast: error 4") {
			t.Fatalf("broadcast from root 1 of 1: %v", err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
