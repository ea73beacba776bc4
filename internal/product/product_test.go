package product

import (
	"maps"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"
)

func TestSearchAttributeTypes(t *testing.T) {
	a := Contract{Name: "a", SearchAttributes: []temporal.SearchAttributeKey{
		temporal.NewSearchAttributeKeyKeyword("Package"), temporal.NewSearchAttributeKeyInt64("Files")}}
	b := Contract{Name: "b", SearchAttributes: []temporal.SearchAttributeKey{
		temporal.NewSearchAttributeKeyKeyword("Package"), temporal.NewSearchAttributeKeyKeywordList("Tags")}}
	got, err := SearchAttributeTypes(a, b)
	want := map[string]string{"Package": "Keyword", "Files": "Int", "Tags": "KeywordList"}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("SearchAttributeTypes = %v, %v; want %v", got, err, want)
	}
	c := Contract{Name: "c", SearchAttributes: []temporal.SearchAttributeKey{temporal.NewSearchAttributeKeyInt64("Package")}}
	if _, err := SearchAttributeTypes(a, c); err == nil || !strings.Contains(err.Error(), "Package is Keyword in a and Int in c") {
		t.Errorf("one attribute with two types: %v", err)
	}
}
