package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"gorstar/internal/atomicfile"
	"gorstar/internal/usererr"
)

// PartialManifest is where an unfinished run whose log is logPath keeps its manifest: beside the
// log, not where the finished run's goes, so that a run that fails leaves the manifest of the
// results an earlier run finished as it was.
func PartialManifest(logPath string) string {
	return strings.TrimSuffix(logPath, ".jsonl") + ".manifest.json"
}

// Resume opens the log of finished items of a run whose settings are man (a struct with JSON
// tags, kept at manPath, usually PartialManifest(logPath)). When the log at logPath exists, the
// manifest an earlier run left at manPath must equal man, or the run is refused with one line,
// naming cmd and the first field that differs; otherwise man is written and the log starts empty.
// Fields named in ignore (paths that may move while their hashes decide) are not compared.
func Resume[M, T any](cmd string, man M, manPath, logPath string, ignore ...string) (*Log[T], []T, error) {
	if _, err := os.Stat(logPath); err == nil {
		var old M
		err := ReadManifest(manPath, &old)
		switch {
		case errors.Is(err, os.ErrNotExist):
			if err := WriteManifest(manPath, man); err != nil {
				return nil, nil, err
			}
		case err != nil:
			return nil, nil, usererr.New("%s: %v", cmd, err)
		default:
			if d := Diff(man, old, ignore...); d != "" {
				return nil, nil, usererr.New("%s: cannot resume %s: it was started with another %s; "+
					"use another --out, or delete %s to start over", cmd, logPath, d, logPath)
			}
		}
	} else if err := WriteManifest(manPath, man); err != nil {
		return nil, nil, err
	}
	return Open[T](logPath)
}

// Diff names the first field (by its JSON name) in which now and was, structs of one type,
// differ, with both values; "" when they agree. Fields named in ignore are skipped; the fields of
// an embedded struct count as the outer struct's, as in its JSON.
func Diff(now, was any, ignore ...string) string {
	return diff(reflect.ValueOf(now), reflect.ValueOf(was), ignore)
}

func diff(a, b reflect.Value, ignore []string) string {
	t := a.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			if d := diff(a.Field(i), b.Field(i), ignore); d != "" {
				return d
			}
			continue
		}
		name := strings.Split(f.Tag.Get("json"), ",")[0]
		if slices.Contains(ignore, name) {
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			return fmt.Sprintf("%s (was %v, now %v)", name, b.Field(i).Interface(), a.Field(i).Interface())
		}
	}
	return ""
}

// ReadManifest reads the JSON manifest at path into m.
func ReadManifest(path string, m any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, m); err != nil {
		return fmt.Errorf("%s: not a manifest: %v", path, err)
	}
	return nil
}

// WriteManifest writes m as indented JSON to path, atomically.
func WriteManifest(path string, m any) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}

// FileSHA256 hashes the files in order, as one stream.
func FileSHA256(paths ...string) (string, error) {
	h := sha256.New()
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("hash %s: %w", p, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ModelSHA256 hashes a model directory's config.json and its safetensors (in name order).
func ModelSHA256(dir string) (string, error) {
	weights, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return "", err
	}
	slices.Sort(weights)
	return FileSHA256(append([]string{filepath.Join(dir, "config.json")}, weights...)...)
}

// IDsSHA256 hashes a sequence of token ids.
func IDsSHA256(ids []int32) string {
	h := sha256.New()
	for _, id := range ids {
		fmt.Fprintf(h, "%d,", id)
	}
	return hex.EncodeToString(h.Sum(nil))
}
