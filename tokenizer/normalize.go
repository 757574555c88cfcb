package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites text before it is split; nil means the identity.
type normalizer func(string) string

func parseNormalizer(raw json.RawMessage) (normalizer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	switch c.Type {
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Sequence":
		var steps []normalizer
		for i, member := range c.Normalizers {
			n, err := parseNormalizer(member)
			if err != nil {
				return nil, fmt.Errorf("normalizers[%d]: %w", i, err)
			}
			if n != nil {
				steps = append(steps, n)
			}
		}
		if len(steps) == 0 {
			return nil, nil
		}
		return func(s string) string {
			for _, n := range steps {
				s = n(s)
			}
			return s
		}, nil
	default:
		return nil, fmt.Errorf("type %q is not supported (NFC, NFD, NFKC, NFKD, Lowercase, Sequence are)", c.Type)
	}
}
