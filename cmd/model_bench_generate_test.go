package cmd

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestGenerateBench(t *testing.T) {
	app := &cli.App{Flags: globalFlags(), Writer: &bytes.Buffer{}, Action: func(c *cli.Context) error {
		o, err := globalOptions(c)
		if err != nil {
			return err
		}
		return generateBench(c, o, "", "tiny", 2, 4, 3, false)
	}}
	var out bytes.Buffer
	app.Writer = &out
	if err := app.Run([]string{"x", "--json"}); err != nil {
		t.Fatal(err)
	}
	var res struct {
		Generate []generateRow `json:"generate"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Generate) != 1 || res.Generate[0].TokensPerS <= 0 {
		t.Fatalf("output %s: %v", out.String(), err)
	}
}
