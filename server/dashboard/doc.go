// Package dashboard serves the web dashboard: static assets embedded in the
// binary (assets/: plain HTML, JS and CSS, no build step, nothing fetched at
// run time) and small JSON endpoints over the engine's own numbers, the ones
// /metrics and rw_catalog show: /api/jobs, /api/fragments?job=ID,
// /api/events and /api/series.
//
// Dashboard is the one type: New takes Sources (the narrow functions it
// reads), Run samples them once a second into the last ten minutes of
// series (barrier latency, rows/s per job and fragment, source and sink lag),
// and Handler serves the page and the endpoints.
package dashboard
