package openai

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// Load is what an endpoint's /metrics says about its capacity.
type Load struct {
	KVUsage float64 // used KV cache, 0..1
	Waiting float64 // requests queued for memory
	Running float64 // requests decoding
}

// The metric names each server kind exports, first found wins. vLLM's gpu_cache_usage_perc and
// kv_cache_usage_perc are fractions despite the names; SGLang's token_usage is too.
var (
	kvUsageNames = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "gorstar:kv_cache_usage"}
	waitingNames = []string{"vllm:num_requests_waiting", "sglang:num_queue_reqs", "gorstar:requests_waiting"}
	runningNames = []string{"vllm:num_requests_running", "sglang:num_running_reqs", "gorstar:requests_running"}
)

// ParseLoad reads the Prometheus text format and returns the load it reports; ok is false when
// no KV-usage metric is there. Several samples of one name (data-parallel engines behind one
// server) are averaged for usage and summed for the queues.
func ParseLoad(r io.Reader) (load Load, ok bool) {
	samples := map[string][]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, good := parseSample(sc.Text())
		if good {
			samples[name] = append(samples[name], value)
		}
	}
	usage, ok := first(samples, kvUsageNames)
	if !ok {
		return Load{}, false
	}
	load.KVUsage = mean(usage)
	if w, found := first(samples, waitingNames); found {
		load.Waiting = sum(w)
	}
	if r, found := first(samples, runningNames); found {
		load.Running = sum(r)
	}
	return load, true
}

// parseSample splits `name{labels} value [timestamp]`; comments and blank lines are not samples.
func parseSample(line string) (string, float64, bool) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", 0, false
	}
	var name, rest string
	if i := strings.IndexByte(line, '{'); i >= 0 {
		j := strings.LastIndexByte(line, '}')
		if j < i {
			return "", 0, false
		}
		name, rest = line[:i], line[j+1:]
	} else {
		name, rest, _ = strings.Cut(line, " ")
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return "", 0, false
	}
	return name, v, true
}

func first(samples map[string][]float64, names []string) ([]float64, bool) {
	for _, n := range names {
		if v, ok := samples[n]; ok {
			return v, true
		}
	}
	return nil, false
}

func sum(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

func mean(v []float64) float64 { return sum(v) / float64(len(v)) }
