package data

import (
	"context"
	"fmt"
	"io"
	"strings"

	"gorstar/internal/progress"
	"gorstar/internal/usererr"
)

// ImportOptions configure Import.
type ImportOptions struct {
	Inputs  []string
	Out     string
	Format  string // auto (default), jsonl, parquet, verl or a public layout (LayoutNames)
	Mapping Mapping
	// Source, when set, is every imported row's source (else the set's name, a source column or
	// the file's name).
	Source string
	// Progress, when set, is advanced by one per input row.
	Progress *progress.Bar
}

// ImportResult summarizes an import. Rows were written; Skipped rows lacked a problem
// (NoProblem) or an answer (NoAnswer); Examples names up to five skipped rows.
type ImportResult struct {
	Rows      int      `json:"rows"`
	Skipped   int      `json:"skipped"`
	Out       string   `json:"out"`
	NoProblem int      `json:"skipped_no_problem"`
	NoAnswer  int      `json:"skipped_no_answer"`
	Examples  []string `json:"-"`
}

// Import reads every input, maps its rows to problems and writes them to opts.Out (Parquet or
// JSONL by extension). Rows without a problem or an answer are skipped and counted. On any error
// the output is not created.
func Import(ctx context.Context, opts ImportOptions) (ImportResult, error) {
	res := ImportResult{Out: opts.Out}
	if len(opts.Inputs) == 0 {
		return res, usererr.New("data import: no input (give --in PATH)")
	}
	switch opts.Format {
	case "", "auto", "jsonl", "parquet", "verl":
	default:
		if layoutByName(opts.Format) == nil {
			return res, usererr.New("data import: --format must be auto, jsonl, parquet, verl or one of %s, got %q",
				strings.Join(LayoutNames(), ", "), opts.Format)
		}
	}
	// Check every input before writing anything, so a typo in the last --in fails fast.
	for _, in := range opts.Inputs {
		if err := checkInputFile(in); err != nil {
			return res, err
		}
	}
	w, err := CreateProblems(opts.Out)
	if err != nil {
		return res, err
	}
	defer w.Abort()
	for _, in := range opts.Inputs {
		if err := importFile(ctx, in, opts, w, &res); err != nil {
			return res, err
		}
	}
	if err := w.Close(); err != nil {
		return res, err
	}
	opts.Progress.Finish()
	return res, nil
}

func importFile(ctx context.Context, path string, opts ImportOptions, w *ProblemWriter, res *ImportResult) error {
	src, err := openSource(ctx, path, opts.Format, opts.Mapping)
	if err != nil {
		return err
	}
	defer src.close()
	for {
		if res.Rows%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		row, err := src.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		opts.Progress.Add(1)
		if row.missing != "" {
			res.Skipped++
			if row.missing == "problem" {
				res.NoProblem++
			} else {
				res.NoAnswer++
			}
			if len(res.Examples) < 5 {
				res.Examples = append(res.Examples, fmt.Sprintf("%s: no %s", row.where, row.missing))
			}
			continue
		}
		if opts.Source != "" {
			row.Source = opts.Source
		}
		if err := w.Write(row.Problem); err != nil {
			return err
		}
		res.Rows++
	}
}

// openSource opens one input in the given format ("auto" decides by extension and content, and
// treats a Parquet file with the verl columns like any other: the default names cover them).
func openSource(ctx context.Context, path, format string, m Mapping) (rowSource, error) {
	if l := layoutByName(format); l != nil {
		return openLayoutSource(ctx, path, l)
	}
	// A public evaluation layout is recognized by its columns unless the user named columns.
	if format != "verl" && m.Problem == "" && m.Answer == "" && !m.answerOptional {
		src, err := openLayoutSource(ctx, path, nil)
		if err != nil || src != nil {
			return src, err
		}
	}
	switch format {
	case "jsonl":
		return openJSONLSource(path, m)
	case "parquet":
		return openParquetSource(ctx, path, m, false)
	case "verl":
		if f, err := sniffFormat(path); err != nil {
			return nil, err
		} else if f == formatJSONL {
			return openJSONLSource(path, withDefaults(m, verlMapping))
		}
		return openParquetSource(ctx, path, m, true)
	}
	f, err := sniffFormat(path)
	if err != nil {
		return nil, err
	}
	if f == formatJSONL {
		return openJSONLSource(path, m)
	}
	return openParquetSource(ctx, path, m, false)
}

// withDefaults fills the empty fields of m from d.
func withDefaults(m, d Mapping) Mapping {
	if m.Problem == "" {
		m.Problem = d.Problem
	}
	if m.Answer == "" {
		m.Answer = d.Answer
	}
	if m.ID == "" {
		m.ID = d.ID
	}
	if m.Source == "" {
		m.Source = d.Source
	}
	return m
}
