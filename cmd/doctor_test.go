package cmd

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gorstar/internal/testenv"
	"gorstar/kernels"
)

// doctor on this machine: the CPU's kernels, and for each vendor its devices or one line saying
// why there are none, with every missing library and what it is needed for.
func TestDoctorReportsWhatIsMissing(t *testing.T) {
	r := runCLI(t, "doctor", "--json")
	if r.Code != 0 {
		t.Fatalf("%+v", r)
	}
	m := decodeJSON(t, r)
	if cpu := m["cpu"].(map[string]any); cpu["kernels"] != kernels.Backend() {
		t.Fatalf("cpu: %v", cpu)
	}
	vendors := m["vendors"].([]any)
	if len(vendors) != 2 {
		t.Fatalf("vendors: %v", vendors)
	}
	for _, v := range vendors {
		v := v.(map[string]any)
		devices := 0
		if rt, ok := v["runtime"].(map[string]any); ok && rt["devices"] != nil {
			devices = len(rt["devices"].([]any))
		}
		msg, _ := v["error"].(string)
		if devices == 0 && (msg == "" || strings.Contains(msg, "\n")) {
			t.Errorf("%s: no devices and error %q", v["vendor"], msg)
		}
		for _, l := range v["libraries"].([]any) {
			l := l.(map[string]any)
			if l["needed_for"] == "" || (l["found"] == false && !strings.HasPrefix(l["error"].(string), "gpu: ")) {
				t.Errorf("%s: library %v", v["vendor"], l)
			}
		}
	}
	if devicesAnywhere := strings.Contains(r.Stdout, `"devices":[{`); !devicesAnywhere && m["auto"] != "cpu" {
		t.Errorf("auto = %v without devices", m["auto"])
	}
	text := runCLI(t, "doctor")
	if text.Code != 0 || !strings.Contains(text.Stdout, "kernels "+kernels.Backend()) || !strings.Contains(text.Stdout, "--device auto") {
		t.Fatalf("%+v", text)
	}
}

// --device auto without a usable GPU is the CPU; cuda and rocm are one line and exit status 1
// (no GPU here).
func TestDeviceFlagGPUKinds(t *testing.T) {
	dir := t.TempDir()
	if r := runCLI(t, "model", "init", "--preset", "tiny", "--out", filepath.Join(dir, "auto"), "--device", "auto"); r.Code != 0 {
		t.Fatalf("--device auto: %+v", r)
	}
	for _, dev := range []string{"cuda", "rocm:1"} {
		r := runCLI(t, "model", "init", "--preset", "tiny", "--out", filepath.Join(dir, dev), "--device", dev)
		if r.Code != 1 || !strings.HasPrefix(r.Stderr, "gorstar: --device "+dev+": ") || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("--device %s: exit %d, stderr %q", dev, r.Code, r.Stderr)
		}
	}
}

// The real binary probes the driver in a child process (its hidden gpu-probe command): a driver
// library that crashes in cuInit is one line and exit status 1, for doctor and --device alike.
func TestDeviceProbeSurvivesCrashingDriver(t *testing.T) {
	bin := gorstarBinary(t)
	testenv.Command(t, "gcc", "apt-get install gcc")
	dir := t.TempDir()
	shim, err := os.ReadFile(filepath.Join("..", "gpu", "shim.h"))
	if err != nil {
		t.Fatal(err)
	}
	list := string(shim)
	list = list[strings.Index(list, "#define GK_CUDA_SYMS(X)"):]
	list = list[:strings.Index(list, "\n\n")]
	var src strings.Builder
	src.WriteString("#include <stdlib.h>\nint cuInit(unsigned f) { abort(); }\n")
	for _, m := range regexp.MustCompile(`X\([^,]+, (\w+),`).FindAllStringSubmatch(list, -1) {
		if m[1] != "cuInit" {
			src.WriteString("int " + m[1] + "() { return 0; }\n")
		}
	}
	c := filepath.Join(dir, "fake.c")
	if err := os.WriteFile(c, []byte(src.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := osexec.Command("gcc", "-shared", "-fPIC", "-o", filepath.Join(dir, "libcuda.so.1"), c).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	cmd := osexec.Command(bin, "model", "init", "--preset", "tiny", "--out", filepath.Join(dir, "m"), "--device", "cuda")
	cmd.Env = append(os.Environ(), "GORSTAR_CUDA_LIBS="+dir)
	out, err := cmd.CombinedOutput()
	want := "gorstar: --device cuda: probing cuda crashed the probe process (SIGABRT: abort) (see `gorstar doctor`)\n"
	if cmd.ProcessState.ExitCode() != 1 || string(out) != want {
		t.Fatalf("exit %v, output %q\nwant %q", err, out, want)
	}
	doc := osexec.Command(bin, "doctor")
	doc.Env = cmd.Env
	out, err = doc.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "cuda           not usable: probing cuda crashed the probe process (SIGABRT: abort)\n") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
}
