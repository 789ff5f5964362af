package rtmpcount

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/relaymesh/relaymesh/internal/rtmp"
)

type fake struct{ rtmp.Handler }

func (fake) Connect(context.Context, *rtmp.Session, *rtmp.ConnectRequest) error { return nil }
func (fake) Publish(_ context.Context, _ *rtmp.Session, req *rtmp.StreamRequest) (rtmp.Publisher, error) {
	if req.Name == "bad" {
		return nil, rtmp.Status{Level: "error", Code: rtmp.CodePublishUnauthorized, Description: "no"}
	}
	return nil, nil
}
func (fake) Play(context.Context, *rtmp.Session, *rtmp.StreamRequest) (rtmp.MediaSource, error) {
	return nil, errors.New("broken")
}

func TestCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	c, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	h := c.Wrap(fake{})
	h.Connect(context.Background(), nil, nil)
	h.Publish(context.Background(), nil, &rtmp.StreamRequest{Name: "bad"})
	h.Publish(context.Background(), nil, &rtmp.StreamRequest{Name: "bad"})
	h.Publish(context.Background(), nil, &rtmp.StreamRequest{Name: "ok"})
	h.Play(context.Background(), nil, &rtmp.StreamRequest{Name: "x"})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			got[strings.Join(ls, ",")] = m.GetCounter().GetValue()
		}
	}
	want := map[string]float64{
		"op=connect,result=accepted": 1, "op=play,result=accepted": 0, "op=play,result=error": 1,
		"op=publish,result=NetStream.Publish.Unauthorized": 2, "op=publish,result=accepted": 1,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
}
