package wiki_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lcl-project/lcl/wiki"
)

// bodyTransport answers every request with status and body, in memory.
type bodyTransport struct {
	status int
	body   []byte
}

func (b bodyTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: b.status, Header: http.Header{"Retry-After": {"1"}},
		Body: io.NopCloser(bytes.NewReader(b.body))}, nil
}

// FuzzAPIResponse: no response of the MediaWiki API, whatever its body and
// status, panics or hangs the client (continuation, redirects and retries
// included); Pages answers every requested title, in order, under its
// normalised name, or fails as a whole.
func FuzzAPIResponse(f *testing.F) {
	f.Add(200, []byte(`{"batchcomplete":true,"query":{"normalized":[{"fromencoded":false,"from":"crane","to":"Crane"}],`+
		`"redirects":[{"from":"Mouse (rodent)","to":"Mouse"}],"pages":[{"pageid":1,"ns":0,"title":"Crane","extract":"A crane.",`+
		`"pageprops":{"disambiguation":""},"lastrevid":1001},{"pageid":2,"ns":0,"title":"Mouse","extract":"A mouse.","lastrevid":1002},`+
		`{"ns":0,"title":"No such page","missing":true}]}}`))
	f.Add(200, []byte(`{"continue":{"plcontinue":"1|0|B","continue":"||"},"query":{"pages":[{"pageid":1,"ns":0,"title":"Crane",`+
		`"links":[{"ns":0,"title":"Bird"},{"ns":14,"title":"Category:Cranes"}]}]}}`))
	f.Add(200, []byte(`{"continue":{"n":3},"query":{"redirects":[{"from":"A","to":"B"},{"from":"B","to":"A"}],"pages":[]}}`))
	f.Add(200, []byte(`{"error":{"code":"maxlag","info":"Waiting for a database server"}}`))
	f.Add(200, []byte(`{"error":{"code":"badvalue","info":"Unrecognized value"}}`))
	f.Add(200, []byte(`{"query":{"pages":[{"title":"Crane","invalid":true},{"title":"Crane","extract":null}]}}`))
	f.Add(503, []byte("Service Unavailable"))
	f.Add(404, []byte("<html>not here</html>"))
	f.Add(200, []byte(`{"query":`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 100 || status > 999 {
			return // not an HTTP status line net/http would hand over
		}
		c := wiki.NewAPIClient("http://api.invalid/w/api.php")
		c.HTTP = &http.Client{Transport: bodyTransport{status: status, body: body}}
		c.MaxRetries = 1
		c.Sleep = func(context.Context, time.Duration) error { return nil }
		titles := []string{"crane", "Mouse (rodent)", "No such page", "crane"}
		pages, err := c.Pages(context.Background(), titles, false)
		if err == nil {
			if len(pages) != len(titles) {
				t.Fatalf("%d pages for %d titles", len(pages), len(titles))
			}
			for i, p := range pages {
				if p.Requested != wiki.NormalizeTitle(titles[i]) {
					t.Fatalf("page %d answers %q, asked for %q", i, p.Requested, titles[i])
				}
			}
		} else if !strings.HasPrefix(err.Error(), "api: ") {
			t.Fatalf("error %q does not name the API", err)
		}
		if _, err := c.Links(context.Background(), "Crane"); err != nil && !strings.HasPrefix(err.Error(), "api: ") {
			t.Fatalf("error %q does not name the API", err)
		}
	})
}
