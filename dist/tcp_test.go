package dist

import (
	"bytes"
	"fmt"
	"math"
	"net"
	"os"
	osexec "os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// tcpWorld joins size ranks on loopback in this process, rank r by goroutine r, and returns their
// Comms (rank order) and errors.
func tcpWorld(t *testing.T, size int, timeout time.Duration, hello func(r int) (rank, size int)) ([]*tcpComm, []error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	comms, errs := make([]*tcpComm, size), make([]error, size)
	var wg sync.WaitGroup
	for r := range size {
		wg.Go(func() {
			if r == 0 {
				defer ln.Close()
				comms[r], errs[r] = acceptRanks(ln, size, timeout)
				return
			}
			rank, n := r, size
			if hello != nil {
				rank, n = hello(r)
			}
			comms[r], errs[r] = dialRoot(addr, rank, n, timeout)
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range comms {
			if c != nil {
				c.close()
			}
		}
	})
	return comms, errs
}

// each runs f on every rank at once and returns the ranks' errors.
func each(comms []*tcpComm, f func(r int, c *tcpComm) error) []error {
	errs := make([]error, len(comms))
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() { errs[r] = f(r, c) })
	}
	wg.Wait()
	return errs
}

func noErrors(t *testing.T, what string, errs []error) {
	t.Helper()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("%s: rank %d: %v", what, r, err)
		}
	}
}

// Every collective through rank 0 gives each rank the result: sums in rank order (the same bits
// on every rank, and the bits of a sequential sum), broadcasts from any root, gathers in rank
// order, barriers; and the ranks may call from several goroutines in turn.
func TestTCPCollectives(t *testing.T) {
	const size = 3
	comms, errs := tcpWorld(t, size, 10*time.Second, nil)
	noErrors(t, "rendezvous", errs)

	vals := func(r int) []float32 { return []float32{0.1 * float32(r+1), 1e8, float32(r) * 3, -1e-3} }
	want := make([]float32, 4)
	for r := range size {
		for i, v := range vals(r) {
			want[i] += v
		}
	}
	got := make([][]float32, size)
	noErrors(t, "AllReduceF32", each(comms, func(r int, c *tcpComm) error {
		got[r] = vals(r)
		return c.AllReduceF32(got[r])
	}))
	for r := range size {
		for i := range want {
			if math.Float32bits(got[r][i]) != math.Float32bits(want[i]) {
				t.Errorf("AllReduceF32 rank %d: %v, want the bits of %v", r, got[r], want)
				break
			}
		}
	}

	sums := make([][]float64, size)
	noErrors(t, "AllReduceF64", each(comms, func(r int, c *tcpComm) error {
		sums[r] = []float64{float64(r), 1.5}
		return c.AllReduceF64(sums[r])
	}))
	for r := range size {
		if sums[r][0] != 3 || sums[r][1] != 4.5 {
			t.Errorf("AllReduceF64 rank %d: %v, want [3 4.5]", r, sums[r])
		}
	}

	for root := range size {
		bufs := make([][]byte, size)
		noErrors(t, "Broadcast", each(comms, func(r int, c *tcpComm) error {
			bufs[r] = make([]byte, 5)
			if r == root {
				copy(bufs[r], fmt.Sprintf("from%d", root))
			}
			return c.Broadcast(bufs[r], root)
		}))
		for r := range size {
			if string(bufs[r]) != fmt.Sprintf("from%d", root) {
				t.Errorf("Broadcast from %d: rank %d has %q", root, r, bufs[r])
			}
		}
	}

	all := make([][]byte, size)
	noErrors(t, "AllGather", each(comms, func(r int, c *tcpComm) (err error) {
		all[r], err = c.AllGather([]byte{byte('a' + r), byte('A' + r)})
		return err
	}))
	for r := range size {
		if string(all[r]) != "aAbBcC" {
			t.Errorf("AllGather rank %d: %q, want aAbBcC", r, all[r])
		}
	}

	// Two goroutines per rank, each a barrier and a gather: the Comm serializes them, and
	// the order they get is the same on every rank only if they do not overlap, so they wait
	// for each other here.
	noErrors(t, "Barrier", each(comms, func(r int, c *tcpComm) error {
		for range 10 {
			if err := c.Barrier(); err != nil {
				return err
			}
		}
		return nil
	}))
	lines := make([][]byte, size)
	noErrors(t, "GatherBytes", each(comms, func(r int, c *tcpComm) error {
		parts, err := GatherBytes(c, bytes.Repeat([]byte{'x'}, r))
		for _, p := range parts {
			lines[r] = append(lines[r], byte('0'+len(p)))
		}
		return err
	}))
	for r := range size {
		if string(lines[r]) != "012" {
			t.Errorf("GatherBytes rank %d: lengths %q, want 012", r, lines[r])
		}
	}
}

// Ranks that call different collectives fail, every one of them, with one line naming both
// calls; and the Comm stays failed.
func TestTCPMismatchedCollectives(t *testing.T) {
	comms, errs := tcpWorld(t, 3, 10*time.Second, nil)
	noErrors(t, "rendezvous", errs)
	errs = each(comms, func(r int, c *tcpComm) error {
		if r == 2 {
			return c.Barrier()
		}
		_, err := c.AllGather([]byte{1})
		return err
	})
	want := "rank 2 called Barrier of 0 bytes (collective #1) where rank 0 called AllGather of 1 bytes (collective #1)"
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("rank %d: %v, want one line containing %q", r, err, want)
		}
	}
	if err := comms[1].Barrier(); err == nil {
		t.Error("a failed Comm took another collective")
	}
}

// A rank that goes away fails the others' next collective with its rank named; rank 0 going
// away fails the rest.
func TestTCPRankGone(t *testing.T) {
	comms, errs := tcpWorld(t, 3, 10*time.Second, nil)
	noErrors(t, "rendezvous", errs)
	comms[2].close()
	errs = each(comms[:2], func(r int, c *tcpComm) error { return c.Barrier() })
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "rank 2: closed its connection") {
			t.Errorf("rank %d after rank 2 left: %v", r, err)
		}
	}

	comms, errs = tcpWorld(t, 2, 10*time.Second, nil)
	noErrors(t, "rendezvous", errs)
	comms[0].close()
	if err := comms[1].Barrier(); err == nil || !strings.Contains(err.Error(), "rank 0 closed the connection") {
		t.Errorf("rank 1 after rank 0 left: %v", err)
	}
}

// The rendezvous fails, on every rank that came, with one line: a rank missing at the timeout
// (named), a rank told another world size, a rank number twice.
func TestTCPRendezvousFailures(t *testing.T) {
	for _, c := range []struct {
		name  string
		hello func(r int) (int, int)
		want0 string
	}{
		{"a rank twice", func(r int) (int, int) { return 1, 3 }, "rank 1 connected twice"},
		{"another size", func(r int) (int, int) { return r, 4 }, "says the world has 4 ranks, rank 0 was told 3"},
		{"rank out of range", func(r int) (int, int) { return r + 5, 3 }, "connected to a world of 3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs := tcpWorld(t, 3, 2*time.Second, c.hello)
			if errs[0] == nil || !strings.Contains(errs[0].Error(), c.want0) {
				t.Errorf("rank 0: %v, want %q", errs[0], c.want0)
			}
			for r, err := range errs[1:] {
				if err == nil || strings.Contains(err.Error(), "\n") {
					t.Errorf("rank %d: %v, want one line", r+1, err)
				}
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		start := time.Now()
		_, err = acceptRanks(ln, 3, 300*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "1 of 3 ranks there after 300ms; missing rank(s) 1, 2") {
			t.Errorf("rank 0 alone: %v", err)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("the timeout of 300 ms took %v", time.Since(start))
		}
		_, err = dialRoot(ln.Addr().String(), 1, 3, 300*time.Millisecond) // nobody accepts
		if err == nil || !strings.Contains(err.Error(), "the world was not complete within 300ms") {
			t.Errorf("rank 1 without rank 0's answer: %v", err)
		}
	})
	t.Run("a stranger", func(t *testing.T) {
		// A connection that does not say hello is dropped; the ranks still meet.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		done := make(chan error, 1)
		go func() {
			c, err := acceptRanks(ln, 2, 5*time.Second)
			if err == nil {
				err = c.Barrier()
				c.close()
			}
			done <- err
		}()
		s, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
		s.Close()
		c, err := dialRoot(ln.Addr().String(), 1, 2, 5*time.Second)
		if err == nil {
			err = c.Barrier()
			c.close()
		}
		if err != nil {
			t.Errorf("rank 1: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("rank 0: %v", err)
		}
	})
}

// rendezvousAddr: GORSTAR_RENDEZVOUS first, else MASTER_ADDR:MASTER_PORT, the next port when
// torchrun's agent holds MASTER_PORT; anything else one line.
func TestRendezvousAddr(t *testing.T) {
	for _, c := range []struct {
		master string
		env    map[string]string
		want   string
		err    string
	}{
		{"10.0.0.1:29500", nil, "10.0.0.1:29500", ""},
		{"10.0.0.1:29500", map[string]string{"TORCHELASTIC_USE_AGENT_STORE": "True"}, "10.0.0.1:29501", ""},
		{"10.0.0.1:29500", map[string]string{RendezvousEnv: "node7:4000", "TORCHELASTIC_USE_AGENT_STORE": "True"}, "node7:4000", ""},
		{"", nil, "", "no rendezvous address: set MASTER_ADDR and MASTER_PORT"},
		{"10.0.0.1:", nil, "", "no rendezvous address"},
		{"10.0.0.1:http", nil, "", `MASTER_PORT="http": want a port number`},
		{"10.0.0.1:1", map[string]string{RendezvousEnv: "nohostport"}, "", `GORSTAR_RENDEZVOUS="nohostport": want host:port`},
	} {
		got, err := rendezvousAddr(Place{Master: c.master}, func(k string) string { return c.env[k] })
		if got != c.want || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("master %q env %v: %q, %v; want %q, %q", c.master, c.env, got, err, c.want, c.err)
		}
	}
	for v, want := range map[string]string{"": "5m0s", "2.5": "2.5s", "0": "want seconds > 0", "x": "want seconds > 0"} {
		d, err := rendezvousTimeout(func(string) string { return v })
		if got := fmt.Sprint(d, err); !strings.Contains(got, want) {
			t.Errorf("%s=%q: %s, want %s", RendezvousTimeoutEnv, v, got, want)
		}
	}
}

// torchrunEnv marks a test binary started by TestJoinTorchrun as one of its ranks.
const torchrunEnv = "GORSTAR_DIST_TORCHRUN_RANK"

// TestJoinTorchrun starts two processes with torchrun's variables (no MPI anywhere): they meet at
// MASTER_ADDR:MASTER_PORT, agree on the world, and sum over it.
func TestJoinTorchrun(t *testing.T) {
	if os.Getenv(torchrunEnv) != "" {
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // a free port, for rank 0 to listen on
	outs := make([]bytes.Buffer, 2)
	cmds := make([]*osexec.Cmd, 2)
	for r := range 2 {
		cmds[r] = osexec.Command(os.Args[0], "-test.run=^TestRankTorchrun$", "-test.v")
		cmds[r].Env = append(os.Environ(), torchrunEnv+"=1", fmt.Sprintf("RANK=%d", r), "WORLD_SIZE=2",
			fmt.Sprintf("LOCAL_RANK=%d", r), "LOCAL_WORLD_SIZE=2", "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+port,
			RendezvousTimeoutEnv+"=60")
		cmds[r].Stdout, cmds[r].Stderr = &outs[r], &outs[r]
		if err := cmds[r].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for r, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Errorf("rank %d: %v\n%s", r, err, outs[r].String())
		}
	}
	for r := range 2 {
		if want := fmt.Sprintf("rank %d of 2 (torchrun): sum 3, bootstrap true, TCP through rank 0 at 127.0.0.1:%s", r, port); !strings.Contains(outs[r].String(), want) {
			t.Errorf("rank %d printed:\n%s\nwant %q", r, outs[r].String(), want)
		}
	}
}

// TestRankTorchrun is one rank of TestJoinTorchrun; alone it does nothing.
func TestRankTorchrun(t *testing.T) {
	if os.Getenv(torchrunEnv) == "" {
		return
	}
	w, err := Join()
	if err != nil {
		t.Fatal(err)
	}
	buf := []float64{float64(w.Rank + 1)}
	if err := w.Comm.AllReduceF64(buf); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("rank %d of %d (%s): sum %g, bootstrap %v, %s\n", w.Rank, w.Size, w.Launcher, buf[0], w.Bootstrap, w.Transport)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
