package metrics

import "github.com/prometheus/client_golang/prometheus"

// Series is one series a Snapshot reports from its reading of T.
type Series[T any] struct {
	// Name is the full series name ("ndiro_photo_cache_hits_total");
	// Help its description.
	Name, Help string
	// Counter says the value only grows (a _total); otherwise it is a
	// gauge.
	Counter bool
	// Value reads the series' value from one reading.
	Value func(T) float64
}

// Snapshot returns a Collector that calls read once per scrape and
// reports each of series from that one reading: the figures a package
// keeps itself (photo.Cache.Stats, photo.Pipeline.Admission, …) reach
// /metrics without a second count, and consistent with each other.
func Snapshot[T any](read func() T, series ...Series[T]) prometheus.Collector {
	s := &snapshot[T]{read: read, series: series}
	for _, se := range series {
		s.descs = append(s.descs, prometheus.NewDesc(se.Name, se.Help, nil, nil))
	}
	return s
}

type snapshot[T any] struct {
	read   func() T
	series []Series[T]
	descs  []*prometheus.Desc
}

func (s *snapshot[T]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range s.descs {
		ch <- d
	}
}

func (s *snapshot[T]) Collect(ch chan<- prometheus.Metric) {
	v := s.read()
	for i, se := range s.series {
		kind := prometheus.GaugeValue
		if se.Counter {
			kind = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(s.descs[i], kind, se.Value(v))
	}
}
