package console

import (
	"errors"
	"net/http"

	"github.com/edgeflow/edgeflow/internal/publish/catalog"
	"github.com/edgeflow/edgeflow/internal/publish/pubclient"
)

// libraries lists the catalog and a library's versions, on the same
// pubclient.Libraries the console's Publish pages read.
func (a publishAPI) libraries(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	page, perPage, perr := paging(r)
	if perr != nil {
		return 0, nil, nil, perr
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	// Only the page's entries are read from the store and visibility.
	out, total, err := a.libs.List(ctx, (page-1)*perPage, perPage)
	if err != nil {
		return 0, nil, nil, err
	}
	return http.StatusOK, out, &ResultInfo{Page: page, PerPage: perPage, Count: len(out), TotalCount: total}, nil
}

func (a publishAPI) library(w http.ResponseWriter, r *http.Request) (int, any, *ResultInfo, error) {
	name := r.PathValue("name")
	if !catalog.ValidName(name) {
		return 0, nil, nil, fail(http.StatusBadRequest, CodeInvalid, "name: %q is not a valid library name (letters, digits, '.', '_' and '-')", name)
	}
	ctx, cancel := a.ctx(r)
	defer cancel()
	d, err := a.libs.Get(ctx, name)
	if errors.Is(err, pubclient.ErrUnknownLibrary) {
		return 0, nil, nil, fail(http.StatusNotFound, CodeNotFound, "name: no library %q in the catalog", name)
	}
	if err != nil {
		return 0, nil, nil, err
	}
	return http.StatusOK, d, nil, nil
}
