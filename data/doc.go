// Package data holds gorstar's two tables and everything that moves them between files:
//
//   - problems: id, problem, answer, source, meta (a JSON object as text), all non-null strings;
//   - conversations for SFT: id and messages, a list of {role, content, tool_calls, name}.
//
// Both are stored as Parquet (zstd) through Apache Arrow, written and read a row group at a time
// so memory stays bounded whatever the file size, or as JSONL with the same field names. The
// package also imports datasets users already have (JSONL, Parquet with a column mapping, the
// verl/rStar2 schema), synthesizes problems with exact answers, and filters, splits, exports and
// summarizes tables. Problems a user can fix (a bad line, a missing column, an empty file) come
// back as usererr errors that name the file, the line or row and the field.
//
// Output files are written through atomicfile: a writer that is aborted, or a command that fails,
// leaves nothing behind.
package data
