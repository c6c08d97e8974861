package mount

import (
	"context"
	"testing"

	"gocloud.dev/blob"

	"github.com/agenttask/agenttask/contract"
	"github.com/agenttask/agenttask/internal/faultblob"
)

// During a storage outage Stat fails with a plain error (a fault worth
// retrying), never FILE_NOT_FOUND, and works again once storage is back.
func TestStoreWithOutage(t *testing.T) {
	for _, d := range drivers(t) {
		t.Run(d.name, func(t *testing.T) {
			sw := &faultblob.Switch{}
			s := NewStoreWith(func(b *blob.Bucket) *blob.Bucket { return faultblob.Wrap(b, sw) })
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			o := upload(t, s, d.spec, "t1", "a.txt", "some content")

			sw.On(nil)
			_, err := s.Stat(context.Background(), d.spec, "t1", "a.txt", nil)
			if err == nil {
				t.Fatal("Stat succeeded during the outage")
			}
			if typ := contract.TypeOf(err); typ != "" {
				t.Fatalf("Stat during the outage: %v: a %s refusal, want a storage fault", err, typ)
			}
			if !faultblob.IsInjected(err) || sw.Failures() == 0 {
				t.Fatalf("Stat during the outage: %v is not the injected fault (%d failures)", err, sw.Failures())
			}

			sw.Off()
			got, err := s.Stat(context.Background(), d.spec, "t1", "a.txt", nil)
			if err != nil {
				t.Fatalf("Stat after the outage: %v", err)
			}
			if got.SHA256 != o.SHA256 || got.Size != o.Size {
				t.Fatalf("Stat after the outage = %+v, uploaded %+v", got, o)
			}
		})
	}
}
