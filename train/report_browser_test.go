package train

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorstar/internal/testenv"
)

// screenshotEnv names a file to copy the fixture report's screenshot to (the README's
// docs/report.png): GORSTAR_REPORT_SCREENSHOT=$PWD/docs/report.png go test ./train -run Chromium
const screenshotEnv = "GORSTAR_REPORT_SCREENSHOT"

// chromium finds Debian's headless-capable browser, or skips.
func chromium(t *testing.T) string {
	t.Helper()
	return testenv.Chromium(t)
}

// runChromium runs the browser headless on page with args and returns stdout and stderr. The
// context bounds a hung browser; it is not a speed check.
func runChromium(t *testing.T, bin, page string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	profile := t.TempDir() // no shared profile, no first-run state
	all := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"}, args...)
	cmd := osexec.CommandContext(ctx, bin, append(all, "file://"+page)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = append(os.Environ(), "HOME="+profile)
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", bin, err, errOut.String())
	}
	return out.String(), errOut.String()
}

// consoleErrors are the page's console messages and script errors in the browser's log.
var consoleErrors = regexp.MustCompile(`(?m)^.*(:CONSOLE[:(]|Uncaught|Refused to|net::ERR_).*$`)

func TestReportRendersInChromium(t *testing.T) {
	testenv.Short(t, "renders in Chromium")
	bin := chromium(t)
	l := writeFixtureRun(t, filepath.Join(t.TempDir(), "quickstart"))
	page, err := WriteReport(l.Dir)
	if err != nil {
		t.Fatal(err)
	}

	dom, stderr := runChromium(t, bin, page, "--dump-dom")
	if bad := consoleErrors.FindAllString(stderr, -1); len(bad) > 0 {
		t.Errorf("console errors while loading the report:\n%s", strings.Join(bad, "\n"))
	}
	// The browser parsed every chart as SVG and every sample as text: the DOM it built has them.
	if n := strings.Count(dom, "<svg "); n != len(sftCharts)+len(rlCharts) {
		t.Errorf("the browser's DOM has %d <svg> elements, want %d", n, len(sftCharts)+len(rlCharts))
	}
	if strings.Contains(dom, "<script") || !strings.Contains(dom, "seg-tool_call") {
		t.Errorf("the browser's DOM has a script, or lacks the highlighted tool calls")
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	// Tall enough to reach the charts below the evaluation tables (the fixture has the per-benchmark one).
	_, stderr = runChromium(t, bin, page, "--screenshot="+shot, "--window-size=1200,3200")
	if bad := consoleErrors.FindAllString(stderr, -1); len(bad) > 0 {
		t.Errorf("console errors while rendering the report:\n%s", strings.Join(bad, "\n"))
	}
	img := readPNG(t, shot)
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 3200 {
		t.Errorf("screenshot is %v, want 1200×3200", b)
	}
	if colored := coloredShare(img); colored < 0.01 {
		t.Errorf("only %.2f%% of the screenshot is coloured: the charts did not render", 100*colored)
	}
	if dst := os.Getenv(screenshotEnv); dst != "" {
		raw, _ := os.ReadFile(shot)
		if err := os.WriteFile(dst, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The check above must see a console error when there is one, or it proves nothing.
func TestChromiumLogCatchesConsoleErrors(t *testing.T) {
	testenv.Short(t, "renders in Chromium")
	bin := chromium(t)
	page := filepath.Join(t.TempDir(), "bad.html")
	os.WriteFile(page, []byte(`<!DOCTYPE html><html><body><script>notDefined()</script></body></html>`), 0o644)
	_, stderr := runChromium(t, bin, page, "--dump-dom")
	if !consoleErrors.MatchString(stderr) {
		t.Fatalf("a page with a script error logged no console error:\n%s", stderr)
	}
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return img
}

// coloredShare is the share of pixels that are clearly not grey (chart lines, highlights).
func coloredShare(img image.Image) float64 {
	b := img.Bounds()
	colored := 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			hi, lo := max(r, g, bl), min(r, g, bl)
			if hi-lo > 0x3000 {
				colored++
			}
		}
	}
	return float64(colored) / float64((b.Dx()/2)*(b.Dy()/2))
}
