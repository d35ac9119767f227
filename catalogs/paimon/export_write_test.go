package paimon

import "github.com/flightgw/flightgw/catalogs"

// SetLaneSpread sets the upload size past which another lane starts and
// returns the undo, so that a test reaches several lanes with little data.
func SetLaneSpread(n int64) func() {
	old := laneSpread
	laneSpread = n
	return func() { laneSpread = old }
}

// StreamBounds reports what a stream of this backend held: the most
// Arrow bytes of primary-key rows it buffered and its bound, the level-0
// files it spilled before Close, and the most files it had open.
func StreamBounds(ws catalogs.WriteStream) (peak, limit int64, spills, peakOpen int) {
	s := ws.(*stream)
	return s.peak, s.bufLimit, s.spills, s.peakOpen
}
