package data

import (
	"context"
	"io"

	"gorstar/internal/usererr"
	"gorstar/reward"
)

// Stats summarizes a table file.
type Stats struct {
	Rows        int64          `json:"rows"`
	Columns     []string       `json:"columns"`
	Table       string         `json:"table"` // problems, conversations or other
	AnswerKinds map[string]int `json:"answer_kinds"`
	// Problems only.
	Sources        map[string]int `json:"sources,omitempty"`
	MeanProblemLen float64        `json:"mean_problem_chars,omitempty"`
	MaxProblemLen  int            `json:"max_problem_chars,omitempty"`
	// Conversations only.
	Messages  int64 `json:"messages,omitempty"`
	ToolCalls int64 `json:"tool_calls,omitempty"`
}

// maxSourcesListed bounds the sources map; past it the rest are counted under "(other)".
const maxSourcesListed = 50

// ComputeStats reads path (Parquet or JSONL, problems or conversations) once and summarizes it.
// Answer kinds are those of reward.Kind.
func ComputeStats(ctx context.Context, path string) (Stats, error) {
	st := Stats{AnswerKinds: map[string]int{}}
	kind, cols, err := tableKind(path)
	if err != nil {
		return st, err
	}
	st.Table, st.Columns = kind, cols
	switch kind {
	case "problems":
		r, err := openProblems(ctx, path)
		if err != nil {
			return st, err
		}
		defer r.Close()
		st.Sources = map[string]int{}
		var chars int64
		for {
			p, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return st, err
			}
			if st.Rows%1024 == 0 && ctx.Err() != nil {
				return st, ctx.Err()
			}
			st.Rows++
			st.AnswerKinds[reward.Kind(p.Answer)]++
			n := len([]rune(p.Problem))
			chars += int64(n)
			st.MaxProblemLen = max(st.MaxProblemLen, n)
			if _, ok := st.Sources[p.Source]; ok || len(st.Sources) < maxSourcesListed {
				st.Sources[p.Source]++
			} else {
				st.Sources["(other)"]++
			}
		}
		if st.Rows > 0 {
			st.MeanProblemLen = float64(chars) / float64(st.Rows)
		}
	case "conversations":
		r, err := openConversations(ctx, path)
		if err != nil {
			return st, err
		}
		defer r.Close()
		for {
			c, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return st, err
			}
			st.Rows++
			st.Messages += int64(len(c.Messages))
			for _, m := range c.Messages {
				st.ToolCalls += int64(len(m.ToolCalls))
			}
		}
	default:
		// Another layout (a verl file, say): count answer kinds through the import mapping when it
		// finds the columns, else just the rows.
		src, err := openSource(ctx, path, "auto", Mapping{})
		if err != nil {
			f, ferr := openParquet(path)
			if ferr != nil {
				return st, ferr
			}
			defer f.close()
			st.Rows = f.numRows()
			return st, nil
		}
		defer src.close()
		for {
			row, err := src.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return st, err
			}
			st.Rows++
			if row.missing == "" {
				st.AnswerKinds[reward.Kind(row.Answer)]++
			}
		}
	}
	return st, nil
}

// tableKind tells which table a file holds, from its Parquet columns or its first JSONL object,
// and lists its columns.
func tableKind(path string) (string, []string, error) {
	format, err := sniffFormat(path)
	if err != nil {
		return "", nil, err
	}
	if format == formatParquet {
		f, err := openParquet(path)
		if err != nil {
			return "", nil, err
		}
		defer f.close()
		cols := f.columnNames()
		switch {
		case f.fieldIndex("messages") >= 0 && f.fieldIndex("id") >= 0:
			return "conversations", cols, nil
		case f.fieldIndex("problem") >= 0 && f.fieldIndex("answer") >= 0:
			return "problems", ProblemColumns, checkProblemsFile(path)
		case f.fieldIndex("problem_id") >= 0 && f.fieldIndex("response") >= 0 && f.fieldIndex("correct_strict") >= 0:
			return kindEvalResults, cols, nil
		case f.fieldIndex("problem_id") >= 0 && f.fieldIndex("response_ids") >= 0 && f.fieldIndex("loss_mask") >= 0:
			return kindTraces, cols, nil
		}
		return "other", cols, nil
	}
	lines, err := openLines(path)
	if err != nil {
		return "", nil, err
	}
	defer lines.close()
	line, err := lines.next()
	if err == io.EOF {
		return "", nil, emptyJSONL(path)
	}
	if err != nil {
		return "", nil, err
	}
	obj, err := decodeObject(line)
	if err != nil {
		return "", nil, usererr.New("%s: %v", lines.where(), err)
	}
	if _, ok := obj["messages"]; ok {
		return "conversations", ConversationColumns, nil
	}
	return "problems", ProblemColumns, nil
}

// checkProblemsFile makes sure a Parquet file that looks like a problems table has all its columns.
func checkProblemsFile(path string) error {
	r, err := OpenProblems(path)
	if err != nil {
		return err
	}
	return r.Close()
}
