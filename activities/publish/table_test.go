package publish

import (
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// Every exported method of a pool's struct is an activity, and the table is
// the only place one is registered: a method added without a row would
// never run, so the table must name each one.
func TestRegistrationTablesNameEveryActivityMethod(t *testing.T) {
	for _, pool := range []struct {
		recv  any
		table []namedActivity
	}{
		{&Publish{}, publishActivities(&Publish{})},
		{&Compress{}, compressActivities(&Compress{})},
	} {
		typ := reflect.TypeOf(pool.recv)
		registered := map[string]bool{}
		for _, row := range pool.table {
			fn := reflect.ValueOf(row.fn)
			if fn.Kind() != reflect.Func {
				t.Fatalf("%s: row %q is not a function", typ, row.name)
			}
			// A method value's name is "pkg.(*T).Method-fm".
			registered[methodName(fn)] = true
		}
		for i := range typ.NumMethod() {
			if m := typ.Method(i); !registered[m.Name] {
				t.Errorf("%s.%s is exported but not in the registration table", typ, m.Name)
			}
		}
	}
}

func methodName(fn reflect.Value) string {
	full := runtimeFuncName(fn)
	return strings.TrimSuffix(full[strings.LastIndex(full, ".")+1:], "-fm")
}

func runtimeFuncName(fn reflect.Value) string {
	return runtime.FuncForPC(fn.Pointer()).Name()
}
