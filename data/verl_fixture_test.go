package data

import (
	"os"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
	"github.com/apache/arrow/go/v17/parquet/schema"
)

// verlRow is one row of a verl/rStar2 training file. A nil pointer is a null cell.
type verlRow struct {
	dataSource  *string
	prompt      []verlTurn // nil = null list
	ability     *string
	groundTruth *string // nil with hasReward = null ground truth
	hasReward   bool
	index       *int64
	split       *string
}

type verlTurn struct{ role, content *string }

func sp(s string) *string { return &s }
func ip(i int64) *int64   { return &i }

// verlRows covers: a system turn before the user turn, several user turns (the last one wins),
// a null reward_model (skipped: no answer), an empty prompt list (skipped: no problem), a null
// extra_info and an assistant turn after the user's.
func verlRows() []verlRow {
	return []verlRow{
		{sp("openai/gsm8k"), []verlTurn{{sp("system"), sp("Be brief.")}, {sp("user"), sp("What is 6 * 7?")}}, sp("math"), sp("42"), true, ip(0), sp("train")},
		{sp("aime"), []verlTurn{{sp("user"), sp("ignored")}, {sp("user"), sp("Half of one?")}, {sp("assistant"), sp("hmm")}}, sp("math"), sp(`\frac{1}{2}`), true, ip(1), sp("train")},
		{sp("aime"), []verlTurn{{sp("user"), sp("No answer here")}}, sp("math"), nil, false, ip(2), sp("train")},
		{sp("aime"), []verlTurn{}, sp("math"), sp("3"), true, ip(3), nil},
		{nil, []verlTurn{{sp("user"), sp("Null source, null extra_info")}}, nil, sp("7"), true, nil, nil},
	}
}

// writeVerlParquetLowLevel writes rows with the Parquet schema pyarrow produces for a verl file:
// every field optional, the list as <list> { repeated group list { optional group ELEMENT { … } } }
// where ELEMENT is "element" (pyarrow ≥ 13) or "item" (older pyarrow), struct children in the
// order pyarrow's dict inference gives (content, role).
func writeVerlParquetLowLevel(t *testing.T, path, element string, rows []verlRow) {
	t.Helper()
	str := func(name string) schema.Node {
		n, err := schema.NewPrimitiveNodeLogical(name, parquet.Repetitions.Optional, schema.StringLogicalType{}, parquet.Types.ByteArray, -1, -1)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	group := func(name string, fields ...schema.Node) *schema.GroupNode {
		g, err := schema.NewGroupNode(name, parquet.Repetitions.Optional, fields, -1)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	turn := group(element, str("content"), str("role"))
	listGroup, err := schema.NewGroupNode("list", parquet.Repetitions.Repeated, schema.FieldList{turn}, -1)
	if err != nil {
		t.Fatal(err)
	}
	prompt, err := schema.NewGroupNodeLogical("prompt", parquet.Repetitions.Optional, schema.FieldList{listGroup}, schema.ListLogicalType{}, -1)
	if err != nil {
		t.Fatal(err)
	}
	root, err := schema.NewGroupNode("schema", parquet.Repetitions.Required, schema.FieldList{
		str("data_source"),
		prompt,
		str("ability"),
		group("reward_model", str("ground_truth"), str("style")),
		group("extra_info", schema.NewInt64Node("index", parquet.Repetitions.Optional, -1), str("split")),
	}, -1)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := file.NewParquetWriter(out, root, file.WithWriterProps(parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy))))
	rg := w.AppendRowGroup()

	// Each column is written from its values (non-null leaves only) and definition/repetition levels.
	byteCol := func(values []parquet.ByteArray, def, rep []int16) {
		cw, err := rg.NextColumn()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cw.(*file.ByteArrayColumnChunkWriter).WriteBatch(values, def, rep); err != nil {
			t.Fatal(err)
		}
		if err := cw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	optionalStrings := func(get func(verlRow) *string, parentNull func(verlRow) bool, maxDef int16) {
		var vals []parquet.ByteArray
		var def []int16
		for _, r := range rows {
			switch v := get(r); {
			case parentNull != nil && parentNull(r):
				def = append(def, 0)
			case v == nil:
				def = append(def, maxDef-1)
			default:
				def = append(def, maxDef)
				vals = append(vals, parquet.ByteArray(*v))
			}
		}
		byteCol(vals, def, nil)
	}
	// prompt.list.<element>.{content, role}: def 0 null list, 1 empty list, 2 null turn, 3 null leaf, 4 value.
	promptLeaf := func(get func(verlTurn) *string) {
		var vals []parquet.ByteArray
		var def, rep []int16
		for _, r := range rows {
			switch {
			case r.prompt == nil:
				def, rep = append(def, 0), append(rep, 0)
			case len(r.prompt) == 0:
				def, rep = append(def, 1), append(rep, 0)
			}
			for j, turn := range r.prompt {
				rep = append(rep, map[bool]int16{true: 0, false: 1}[j == 0])
				if v := get(turn); v != nil {
					def = append(def, 4)
					vals = append(vals, parquet.ByteArray(*v))
				} else {
					def = append(def, 3)
				}
			}
		}
		byteCol(vals, def, rep)
	}

	optionalStrings(func(r verlRow) *string { return r.dataSource }, nil, 1)
	promptLeaf(func(tn verlTurn) *string { return tn.content })
	promptLeaf(func(tn verlTurn) *string { return tn.role })
	optionalStrings(func(r verlRow) *string { return r.ability }, nil, 1)
	noReward := func(r verlRow) bool { return !r.hasReward }
	optionalStrings(func(r verlRow) *string { return r.groundTruth }, noReward, 2)
	optionalStrings(func(r verlRow) *string { return sp("rule") }, noReward, 2)
	noExtra := func(r verlRow) bool { return r.index == nil && r.split == nil }
	{
		cw, err := rg.NextColumn()
		if err != nil {
			t.Fatal(err)
		}
		var vals []int64
		var def []int16
		for _, r := range rows {
			switch {
			case noExtra(r):
				def = append(def, 0)
			case r.index == nil:
				def = append(def, 1)
			default:
				def = append(def, 2)
				vals = append(vals, *r.index)
			}
		}
		if _, err := cw.(*file.Int64ColumnChunkWriter).WriteBatch(vals, def, nil); err != nil {
			t.Fatal(err)
		}
		if err := cw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	optionalStrings(func(r verlRow) *string { return r.split }, noExtra, 2)
	if err := rg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeVerlParquetArrow writes rows through Arrow with large_string values and the Arrow schema
// stored in the file metadata, as pyarrow does (its readers then restore the Arrow types).
func writeVerlParquetArrow(t *testing.T, path string, rows []verlRow) {
	t.Helper()
	str := arrow.BinaryTypes.LargeString
	turn := arrow.StructOf(arrow.Field{Name: "content", Type: str, Nullable: true}, arrow.Field{Name: "role", Type: str, Nullable: true})
	reward := arrow.StructOf(arrow.Field{Name: "ground_truth", Type: str, Nullable: true}, arrow.Field{Name: "style", Type: str, Nullable: true})
	extra := arrow.StructOf(arrow.Field{Name: "index", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, arrow.Field{Name: "split", Type: str, Nullable: true})
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "data_source", Type: str, Nullable: true},
		{Name: "prompt", Type: arrow.ListOfField(arrow.Field{Name: "item", Type: turn, Nullable: true}), Nullable: true},
		{Name: "ability", Type: str, Nullable: true},
		{Name: "reward_model", Type: reward, Nullable: true},
		{Name: "extra_info", Type: extra, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	appendStr := func(sb *array.LargeStringBuilder, v *string) {
		if v == nil {
			sb.AppendNull()
		} else {
			sb.Append(*v)
		}
	}
	for _, r := range rows {
		appendStr(b.Field(0).(*array.LargeStringBuilder), r.dataSource)
		lb := b.Field(1).(*array.ListBuilder)
		if r.prompt == nil {
			lb.AppendNull()
		} else {
			lb.Append(true)
			tb := lb.ValueBuilder().(*array.StructBuilder)
			for _, tn := range r.prompt {
				tb.Append(true)
				appendStr(tb.FieldBuilder(0).(*array.LargeStringBuilder), tn.content)
				appendStr(tb.FieldBuilder(1).(*array.LargeStringBuilder), tn.role)
			}
		}
		appendStr(b.Field(2).(*array.LargeStringBuilder), r.ability)
		rb := b.Field(3).(*array.StructBuilder)
		if r.hasReward {
			rb.Append(true)
			appendStr(rb.FieldBuilder(0).(*array.LargeStringBuilder), r.groundTruth)
			appendStr(rb.FieldBuilder(1).(*array.LargeStringBuilder), sp("rule"))
		} else {
			rb.AppendNull()
		}
		eb := b.Field(4).(*array.StructBuilder)
		if r.index == nil && r.split == nil {
			eb.AppendNull()
		} else {
			eb.Append(true)
			if r.index == nil {
				eb.FieldBuilder(0).(*array.Int64Builder).AppendNull()
			} else {
				eb.FieldBuilder(0).(*array.Int64Builder).Append(*r.index)
			}
			appendStr(eb.FieldBuilder(1).(*array.LargeStringBuilder), r.split)
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	fw, err := pqarrow.NewFileWriter(sc, out, parquet.NewWriterProperties(), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}
