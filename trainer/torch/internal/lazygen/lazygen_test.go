package lazygen

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The committed lazy_gen.c is what the shim's headers generate now: a
// function added to shim.h without `go generate` fails here, not in a
// lazy build at link time.
func TestLazyGenUpToDate(t *testing.T) {
	dir := filepath.Join("..", "..")
	names := []string{"shim.h", "scriptcheck.h"}
	headers := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		headers[n] = b
	}
	want, err := Generate(headers, names)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "lazy_gen.c"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatal("trainer/torch/lazy_gen.c is not what shim.h and scriptcheck.h generate: run go generate ./trainer/torch/")
	}
}

func TestParse(t *testing.T) {
	h := []byte(`#define X 1
typedef struct { int a; } lt_s; /* lt_fake(int) in a comment */
typedef struct lt_t lt_t;
int32_t lt_abi_version(void) LT_NOEXCEPT;
const char *lt_name(const lt_t *t,
                    int64_t n, char **err); // trailing
void lt_free(lt_t *t) LT_NOEXCEPT;
`)
	got, err := Parse(h)
	if err != nil {
		t.Fatal(err)
	}
	want := []Func{
		{Ret: "int32_t", Name: "lt_abi_version"},
		{Ret: "const char *", Name: "lt_name", Params: []Param{{"const lt_t *", "t"}, {"int64_t", "n"}, {"char **", "err"}}},
		{Ret: "void", Name: "lt_free", Params: []Param{{"lt_t *", "t"}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse = %+v\nwant %+v", got, want)
	}
	if _, err := Parse([]byte("int32_t lt_f(int64_t);")); err == nil {
		t.Fatal("an unnamed parameter was accepted")
	}
}
