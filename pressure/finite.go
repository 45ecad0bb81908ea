package pressure

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/frontier-llm/frontier/record"
)

// keepFinite replaces every number of p that is not finite (an overflowed rate, a ratio
// over zero) so that the result can be written as JSON, which has no Inf or NaN: a field
// becomes 0 and a map entry is dropped. It returns where it found them, so that the record
// can say so instead of losing everything that was measured to one number.
func keepFinite(p *record.Pressure) []string {
	var where []string
	walkFinite(reflect.ValueOf(p).Elem(), "", &where)
	return where
}

func walkFinite(v reflect.Value, path string, where *[]string) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
			*where = append(*where, fmt.Sprintf("%s (%g)", path, f))
			v.SetFloat(0)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkFinite(v.Elem(), path, where)
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			f := t.Field(i)
			if !f.IsExported() || !v.Field(i).CanSet() {
				continue
			}
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" || name == "-" {
				name = f.Name
			}
			walkFinite(v.Field(i), join(path, name), where)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkFinite(v.Index(i), fmt.Sprintf("%s[%d]", path, i), where)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := v.MapIndex(k)
			at := join(path, fmt.Sprint(k.Interface()))
			switch e.Kind() {
			case reflect.Float32, reflect.Float64:
				if f := e.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
					*where = append(*where, fmt.Sprintf("%s (%g)", at, f))
					v.SetMapIndex(k, reflect.Value{})
				}
			case reflect.Interface:
				if f, ok := e.Interface().(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
					*where = append(*where, fmt.Sprintf("%s (%g)", at, f))
					v.SetMapIndex(k, reflect.Value{})
				}
			default:
				// A map's values cannot be set in place: walk a copy and store it back.
				c := reflect.New(e.Type()).Elem()
				c.Set(e)
				n := len(*where)
				walkFinite(c, at, where)
				if len(*where) > n {
					v.SetMapIndex(k, c)
				}
			}
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// finiteNote is the record's note about the numbers keepFinite replaced.
func finiteNote(where []string) string {
	shown := where
	if len(shown) > 5 {
		shown = shown[:5]
	}
	s := fmt.Sprintf("%d figure(s) were not finite numbers and are stored as 0 or left out: %s", len(where), strings.Join(shown, ", "))
	if len(where) > len(shown) {
		s += fmt.Sprintf(" and %d more", len(where)-len(shown))
	}
	return s
}
