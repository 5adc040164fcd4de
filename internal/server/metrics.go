package server

import (
	"ndiro/internal/account"
	"ndiro/internal/metrics"
	"ndiro/internal/photo"
	"ndiro/internal/share"
)

// figures are the parts of the app whose own counters /metrics reports.
type figures struct {
	cache     *photo.Cache
	pipeline  *photo.Pipeline
	heic      *photo.HEICDecoder
	shares    *share.Store
	deletions *account.Deleter
}

// registerFigures adds to m a collector per part of f, each reading that
// part's counters once per scrape: the same figures the admin monitor
// shows, never counted a second time.
func registerFigures(m *metrics.Metrics, f figures) error {
	return m.Register(
		metrics.Snapshot(f.cache.Stats,
			metrics.Series[photo.Stats]{Name: "ndiro_photo_cache_hits_total", Help: "Photo requests the in-process photo cache answered.", Counter: true, Value: func(s photo.Stats) float64 { return float64(s.Hits) }},
			metrics.Series[photo.Stats]{Name: "ndiro_photo_cache_misses_total", Help: "Photo requests the photo cache sent to S3.", Counter: true, Value: func(s photo.Stats) float64 { return float64(s.Misses) }},
			metrics.Series[photo.Stats]{Name: "ndiro_photo_cache_evictions_total", Help: "Photos the photo cache dropped to stay within its budget.", Counter: true, Value: func(s photo.Stats) float64 { return float64(s.Evictions) }},
			metrics.Series[photo.Stats]{Name: "ndiro_photo_cache_bytes", Help: "Photo data the photo cache holds, in bytes.", Value: func(s photo.Stats) float64 { return float64(s.Bytes) }},
			metrics.Series[photo.Stats]{Name: "ndiro_photo_cache_budget_bytes", Help: "The photo cache's budget in bytes (NDIRO_PHOTO_CACHE_BYTES).", Value: func(s photo.Stats) float64 { return float64(s.Budget) }},
			metrics.Series[photo.Stats]{Name: "ndiro_photo_cache_items", Help: "Photos the photo cache holds.", Value: func(s photo.Stats) float64 { return float64(s.Items) }},
		),
		metrics.Snapshot(f.pipeline.Admission,
			metrics.Series[photo.AdmissionStats]{Name: "ndiro_decode_waiting", Help: "Uploads waiting now for their share of the decode budget.", Value: func(s photo.AdmissionStats) float64 { return float64(s.Waiting) }},
			metrics.Series[photo.AdmissionStats]{Name: "ndiro_decode_admitted_total", Help: "Shares of the decode budget granted (one for an upload's header, one for its decode).", Counter: true, Value: func(s photo.AdmissionStats) float64 { return float64(s.Admitted) }},
			metrics.Series[photo.AdmissionStats]{Name: "ndiro_decode_waited_total", Help: "Shares of the decode budget granted after a wait.", Counter: true, Value: func(s photo.AdmissionStats) float64 { return float64(s.Waited) }},
			metrics.Series[photo.AdmissionStats]{Name: "ndiro_decode_refused_total", Help: "Waits for the decode budget that ended without a share (server busy, or the upload given up).", Counter: true, Value: func(s photo.AdmissionStats) float64 { return float64(s.Refused) }},
			metrics.Series[photo.AdmissionStats]{Name: "ndiro_decode_wait_seconds_total", Help: "Time uploads spent waiting for the decode budget.", Counter: true, Value: func(s photo.AdmissionStats) float64 { return s.WaitTime.Seconds() }},
			metrics.Series[photo.AdmissionStats]{Name: "ndiro_decode_budget_bytes", Help: "The decode budget in bytes (NDIRO_DECODE_BUDGET_BYTES).", Value: func(s photo.AdmissionStats) float64 { return float64(s.Budget) }},
		),
		metrics.Snapshot(f.heic.Status,
			metrics.Series[photo.HEICStatus]{Name: "ndiro_heic_decodes_total", Help: "HEIC photos the worker process decoded.", Counter: true, Value: func(s photo.HEICStatus) float64 { return float64(s.Decodes) }},
			metrics.Series[photo.HEICStatus]{Name: "ndiro_heic_kills_total", Help: "HEIC decodes stopped for time or memory (the worker killed).", Counter: true, Value: func(s photo.HEICStatus) float64 { return float64(s.Killed) }},
			metrics.Series[photo.HEICStatus]{Name: "ndiro_heic_cancellations_total", Help: "HEIC decodes stopped because their upload was given up.", Counter: true, Value: func(s photo.HEICStatus) float64 { return float64(s.Cancelled) }},
			metrics.Series[photo.HEICStatus]{Name: "ndiro_heic_start_failures_total", Help: "Starts of the HEIC worker process that failed.", Counter: true, Value: func(s photo.HEICStatus) float64 { return float64(s.StartFailures) }},
		),
		metrics.Snapshot(f.shares.Opened,
			metrics.Series[int64]{Name: "ndiro_share_opens_total", Help: "Share link visits counted (pages a recipient opened; HEAD and photos not counted).", Counter: true, Value: func(n int64) float64 { return float64(n) }},
		),
		metrics.Snapshot(f.deletions.Stats,
			metrics.Series[account.DeleterStats]{Name: "ndiro_deletion_jobs_started_total", Help: "Account deletion runs started or resumed.", Counter: true, Value: func(s account.DeleterStats) float64 { return float64(s.Started) }},
			metrics.Series[account.DeleterStats]{Name: "ndiro_deletion_jobs_finished_total", Help: "Account deletion runs that deleted everything.", Counter: true, Value: func(s account.DeleterStats) float64 { return float64(s.Finished) }},
			metrics.Series[account.DeleterStats]{Name: "ndiro_deletion_jobs_failed_total", Help: "Account deletion runs given up (the admin page resumes them).", Counter: true, Value: func(s account.DeleterStats) float64 { return float64(s.Failed) }},
			metrics.Series[account.DeleterStats]{Name: "ndiro_deletion_jobs_running", Help: "Account deletion runs going now.", Value: func(s account.DeleterStats) float64 { return float64(s.Running) }},
		),
	)
}
