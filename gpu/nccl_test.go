package gpu

import (
	"fmt"
	"net"
	"os"
	"os/exec"
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

// ncclRankEnv marks a test binary started by TestCollectiveCommTorchrun as one of its ranks.
const ncclRankEnv = "GORSTAR_GPU_NCCL_RANK"

// Two processes launched torchrun's way (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; no MPI)
// meet at rank 0's address, and NCCL's unique id made on rank 0 reaches rank 1 over that TCP
// rendezvous: the fake NCCL's ncclCommInitRank accepts only the id its ncclGetUniqueId made, in
// a world of 2. A rank without NCCL fails with its line, and rank 0, waiting to send the id,
// with one naming that rank.
func TestCollectiveCommTorchrun(t *testing.T) {
	if os.Getenv(ncclRankEnv) != "" {
		return
	}
	dir := t.TempDir()
	fakeLibrary(t, dir, "libnccl.so.2", tableNames(t, "GK_NCCL_SYMS"), map[string]string{
		"ncclGetUniqueId":  "typedef struct { char b[128]; } uid_fake; int ncclGetUniqueId(uid_fake *id) { for (int i = 0; i < 128; i++) id->b[i] = (char)(i * 7 + 3); return 0; }",
		"ncclCommInitRank": "int ncclCommInitRank(void **c, int n, uid_fake id, int r) { if (n != 2 || r < 0 || r > 1) return 4; for (int i = 0; i < 128; i++) if (id.b[i] != (char)(i * 7 + 3)) return 5; *c = (void *)8; return 0; }",
	})
	run := func(libs ...string) []string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		ln.Close()
		outs := make([]strings.Builder, 2)
		cmds := make([]*exec.Cmd, 2)
		for r := range 2 {
			cmds[r] = exec.Command(os.Args[0], "-test.run=^TestRankNCCLTorchrun$")
			cmds[r].Env = append(os.Environ(), ncclRankEnv+"=1", EnvCUDA+"="+libs[r], fmt.Sprintf("RANK=%d", r), "WORLD_SIZE=2",
				"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port, dist.RendezvousTimeoutEnv+"=60")
			cmds[r].Stdout, cmds[r].Stderr = &outs[r], &outs[r]
			if err := cmds[r].Start(); err != nil {
				t.Fatal(err)
			}
		}
		got := make([]string, 2)
		for r, c := range cmds {
			c.Wait()
			got[r] = outs[r].String()
		}
		return got
	}
	for r, out := range run(dir, dir) {
		if want := fmt.Sprintf("rank %d: NCCL ok", r); !strings.Contains(out, want) {
			t.Errorf("rank %d printed:\n%s\nwant %q", r, out, want)
		}
	}
	out := run(dir, t.TempDir())
	if want := "rank 1: gpu: NCCL not found"; !strings.Contains(out[1], want) {
		t.Errorf("rank 1 without NCCL printed:\n%s\nwant %q", out[1], want)
	}
	if want := "rank 0: gpu: NCCL: broadcasting the unique id: Broadcast of 128 bytes from rank 0 (collective #1): rank 1: closed its connection"; !strings.Contains(out[0], want) {
		t.Errorf("rank 0 beside a rank without NCCL printed:\n%s\nwant %q", out[0], want)
	}
}

// TestRankNCCLTorchrun is one rank of TestCollectiveCommTorchrun; alone it does nothing.
func TestRankNCCLTorchrun(t *testing.T) {
	if os.Getenv(ncclRankEnv) == "" {
		return
	}
	w, err := dist.Join()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	c, err := NewCollectiveComm(&Device{Vendor: VendorCUDA, dry: true}, w.Comm, w.Rank, w.Size)
	if err != nil {
		fmt.Printf("rank %d: %v\n", w.Rank, err)
		os.Exit(1)
	}
	fmt.Printf("rank %d: NCCL ok\n", w.Rank)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
