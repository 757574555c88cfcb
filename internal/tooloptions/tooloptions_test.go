package tooloptions

import (
	"reflect"
	"testing"
	"time"

	"gorstar/config"
	"gorstar/pytool"
)

// The configuration's defaults are the tool's: the two lists of defaults cannot drift apart.
func TestDefaultsAgree(t *testing.T) {
	if got, want := From(config.DefaultExec()), pytool.DefaultOptions(); !reflect.DeepEqual(got, want) {
		t.Errorf("From(config.DefaultExec()) = %+v\npytool.DefaultOptions() = %+v", got, want)
	}
}

// Every [exec] key reaches the option of the same name: each field is set to a value of its own
// and must come out unchanged, so a key added to config.Exec and forgotten here fails.
func TestEveryKeyIsCarried(t *testing.T) {
	var e config.Exec
	ev := reflect.ValueOf(&e).Elem()
	want := map[string]any{}
	for i := 0; i < ev.NumField(); i++ {
		f, sf := ev.Field(i), ev.Type().Field(i)
		if sf.Tag.Get("renamed") != "" {
			continue // an old key name, moved onto its new key when decoded
		}
		switch v := f.Addr().Interface().(type) {
		case *int:
			*v = 100 + i
			want[sf.Name] = *v
		case *string:
			*v = sf.Name
			want[sf.Name] = *v
		case *[]string:
			*v = []string{sf.Name, "x"}
			want[sf.Name] = *v
		case *config.Duration:
			*v = config.D(time.Duration(i) * time.Second)
			want[sf.Name] = v.Duration
		default:
			t.Fatalf("config.Exec.%s: type %s not handled by this test", sf.Name, sf.Type)
		}
	}
	o := reflect.ValueOf(From(e))
	for name, w := range want {
		f := o.FieldByName(name)
		if !f.IsValid() {
			t.Errorf("pytool.Options has no field %s for exec key of config.Exec.%s", name, name)
			continue
		}
		if !reflect.DeepEqual(f.Interface(), w) {
			t.Errorf("%s: got %v, want %v", name, f.Interface(), w)
		}
	}
	if n := o.NumField(); n != len(want) {
		t.Errorf("pytool.Options has %d fields, config.Exec %d keys", n, len(want))
	}
}
