package dist

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"gorstar/internal/mpitest"
)

// childEnv marks a test binary started by mpirun as a rank of TestCollectivesOnMPI.
const childEnv = "GORSTAR_DIST_TEST_RANK"

// TestCollectivesOnMPI runs TestRankCollectives in 3 ranks under mpirun (a real Open MPI or
// MPICH, loaded with dlopen) and checks that each rank passed.
func TestCollectivesOnMPI(t *testing.T) {
	cmd := mpitest.Self(t, 3, "TestRankCollectives", childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mpirun: %v\n%s", err, out)
	}
	for r := range 3 {
		if !bytes.Contains(out, fmt.Appendf(nil, "rank %d of 3: collectives ok", r)) {
			t.Errorf("rank %d did not report; output:\n%s", r, out)
		}
	}
	if !bytes.Contains(out, []byte("world: 3 ranks on 1 node(s), launched by")) {
		t.Errorf("no world line; output:\n%s", out)
	}
}

// TestRankCollectives is one rank's side of TestCollectivesOnMPI; alone it does nothing.
func TestRankCollectives(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		return
	}
	w, err := Join()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.Size != 3 || w.Transport == "" {
		t.Fatalf("world %+v", w)
	}
	line, err := w.Describe(1)
	if err != nil {
		t.Fatal(err)
	}
	if w.Root() {
		fmt.Println(line)
	}
	r := w.Rank
	// Sums of small integers are exact in any order: 0+1+2 = 3 times the element index.
	f32 := make([]float32, 1000)
	f64 := make([]float64, 7)
	for i := range f32 {
		f32[i] = float32(r * i)
	}
	for i := range f64 {
		f64[i] = float64(r) + 0.5
	}
	if err := w.Comm.AllReduceF32(f32); err != nil {
		t.Fatal(err)
	}
	if err := w.Comm.AllReduceF64(f64); err != nil {
		t.Fatal(err)
	}
	for i := range f32 {
		if f32[i] != float32(3*i) {
			t.Fatalf("rank %d: all-reduce f32[%d] = %g, want %d", r, i, f32[i], 3*i)
		}
	}
	if f64[6] != 4.5 {
		t.Fatalf("rank %d: all-reduce f64 = %g, want 4.5", r, f64[6])
	}
	msg := []byte("from rank 0  ")
	if r != 0 {
		copy(msg, "not yet      ")
	}
	if err := w.Comm.Broadcast(msg, 0); err != nil {
		t.Fatal(err)
	}
	if string(msg) != "from rank 0  " {
		t.Fatalf("rank %d: broadcast got %q", r, msg)
	}
	all, err := w.Comm.AllGather([]byte{byte('a' + r), byte('A' + r)})
	if err != nil {
		t.Fatal(err)
	}
	if string(all) != "aAbBcC" {
		t.Fatalf("rank %d: all-gather got %q", r, all)
	}
	parts, err := GatherBytes(w.Comm, bytes.Repeat([]byte{byte('0' + r)}, r))
	if err != nil || len(parts) != 3 || string(parts[0]) != "" || string(parts[1]) != "1" || string(parts[2]) != "22" {
		t.Fatalf("rank %d: GatherBytes got %q, %v", r, parts, err)
	}
	var mine []byte
	if r == 1 {
		mine = []byte("a longer message from rank 1")
	}
	got, err := BroadcastBytes(w.Comm, mine, 1)
	if err != nil || string(got) != "a longer message from rank 1" {
		t.Fatalf("rank %d: BroadcastBytes got %q, %v", r, got, err)
	}
	if err := w.Comm.Barrier(); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("rank %d of %d: collectives ok\n", r, w.Size)
}

// TestMissingLibrary: a world of two without a usable MPI library is one line naming what was
// tried, and a library that is not MPI names the missing symbol.
func TestMissingLibrary(t *testing.T) {
	for _, c := range []struct{ lib, want string }{
		{"/nonexistent/libmpi.so", "no MPI library found (tried /nonexistent/libmpi.so): install Open MPI"},
		{"libc.so.6", "libc.so.6 has no symbol MPI_Init_thread: not a usable MPI library"},
	} {
		t.Setenv("GORSTAR_LIBMPI", c.lib)
		t.Setenv("OMPI_COMM_WORLD_RANK", "0")
		t.Setenv("OMPI_COMM_WORLD_SIZE", "2")
		_, err := Join()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("GORSTAR_LIBMPI=%s: error %v, want one line containing %q", c.lib, err, c.want)
		}
		if err != nil && !strings.Contains(err.Error(), "rank 0 of 2 (Open MPI)") {
			t.Errorf("error does not name the rank and launcher: %v", err)
		}
	}
}

func TestAlone(t *testing.T) {
	w, err := Join()
	if err != nil || w.Size != 1 || !w.Root() || w.Distributed() {
		t.Fatalf("Join without a launcher: %+v, %v", w, err)
	}
	buf := []float32{1, 2}
	if err := w.Comm.AllReduceF32(buf); err != nil || buf[0] != 1 || buf[1] != 2 {
		t.Errorf("all-reduce in a world of one changed %v (%v)", buf, err)
	}
	var none *World
	if !none.Root() || none.Ranks() != 1 || none.Collectives() == nil {
		t.Error("a nil World is not a world of one")
	}
}
