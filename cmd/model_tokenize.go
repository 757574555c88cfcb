package cmd

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/urfave/cli/v2"

	"gorstar/internal/usererr"
	"gorstar/tokenizer"
)

// modelTokenizeCommand is `gorstar model tokenize`: text to ids (or ids back to text) with a model
// directory's tokenizer.json.
func modelTokenizeCommand() *cli.Command {
	return &cli.Command{
		Name:  "tokenize",
		Usage: "encode text with a model's tokenizer.json (or decode ids with --ids)",
		Description: "Prints one token per line (id and the bytes it stands for), or with --json one object\n" +
			"{\"ids\": [...], \"count\": N}. Control tokens written in the text (<|im_end|> …) are matched\n" +
			"unless --no-special is given.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Usage: "model `DIR` holding tokenizer.json (or a tokenizer.json file)"},
			&cli.StringFlag{Name: "text", Usage: "text to encode"},
			&cli.StringFlag{Name: "file", Usage: "encode the content of `PATH` (- for standard input)"},
			&cli.StringFlag{Name: "ids", Usage: "decode these ids instead, a JSON array such as '[9707, 1879]'"},
			&cli.BoolFlag{Name: "no-special", Usage: "encode control tokens written in the text as plain text"},
		},
		Action: modelTokenize,
	}
}

func modelTokenize(c *cli.Context) error {
	o, err := globalOptions(c)
	if err != nil {
		return err
	}
	tok, err := loadTokenizer(c.String("model"))
	if err != nil {
		return err
	}
	given := 0
	for _, name := range []string{"text", "file", "ids"} {
		if c.IsSet(name) {
			given++
		}
	}
	if given != 1 {
		return usererr.New("model tokenize: give exactly one of --text, --file or --ids")
	}
	if c.IsSet("ids") {
		return decodeIDs(c, o, tok, c.String("ids"))
	}
	text := c.String("text")
	if c.IsSet("file") {
		if text, err = readTextFile(c.String("file")); err != nil {
			return err
		}
	}
	ids := tok.EncodeWithSpecials(text, !c.Bool("no-special"))
	if o.JSON {
		if ids == nil {
			ids = []int32{}
		}
		return printJSON(c, map[string]any{"ids": ids, "count": len(ids)})
	}
	w := c.App.Writer
	for _, id := range ids {
		b, _ := tok.TokenBytes(id)
		fmt.Fprintf(w, "%d\t%s\n", id, strconv.Quote(string(b)))
	}
	fmt.Fprintf(w, "%d tokens, %d bytes\n", len(ids), len(text))
	return nil
}

func decodeIDs(c *cli.Context, o Options, tok *tokenizer.Tokenizer, raw string) error {
	var ids []int32
	if err := json.Unmarshal([]byte(raw), &ids); err != nil {
		return usererr.New("--ids: want a JSON array of integers, got %q: %v", raw, err)
	}
	for i, id := range ids {
		if _, ok := tok.IDToToken(id); !ok {
			return usererr.New("--ids: element %d: id %d is not in the vocabulary (size %d)", i, id, tok.VocabSize())
		}
	}
	text := tok.Decode(ids)
	if o.JSON {
		return printJSON(c, map[string]any{"text": text, "count": len(ids)})
	}
	_, err := fmt.Fprintln(c.App.Writer, text)
	return err
}

// loadTokenizer reads DIR/tokenizer.json, or the file itself when given one.
func loadTokenizer(path string) (*tokenizer.Tokenizer, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, usererr.New("--model %s: %v", path, err)
	}
	if st.IsDir() {
		return tokenizer.Load(path)
	}
	return tokenizer.LoadFile(path)
}

func readTextFile(path string) (string, error) {
	if path == "-" {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return "", fmt.Errorf("read standard input: %w", err)
		}
		return string(data), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", usererr.New("--file %s: %v", path, err)
	}
	return string(data), nil
}
