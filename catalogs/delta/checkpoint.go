package delta

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/flightgw/flightgw/catalogs"
	"github.com/flightgw/flightgw/catalogs/lake"
	dcodec "github.com/flightgw/flightgw/codec/delta"
)

// checkpointDue reports whether the commit of version v writes a
// checkpoint: every delta.checkpointInterval versions (10 when unset),
// as Delta Spark does, never at the create.
func checkpointDue(md *dcodec.Metadata, v int64) bool {
	return v > 0 && v%md.CheckpointInterval() == 0
}

// checkpointAfter writes the checkpoint of version v and
// _last_checkpoint once the commit of v has landed. A checkpoint only
// speeds replay up, so a failure is logged and the commit still stands.
func (p *Provider) checkpointAfter(ctx context.Context, t catalogs.TableIdent, v int64) {
	if err := p.checkpoint(ctx, t, v); err != nil {
		p.log.WarnContext(ctx, "delta checkpoint not written; the commit stands", "table", t.String(), "version", v, "error", err)
	}
}

// checkpoint writes a classic checkpoint, or on a table with v2Checkpoint
// a UUID-named V2 one with its sidecar (as Delta Spark writes them with
// delta.checkpointPolicy v2), then _last_checkpoint.
func (p *Provider) checkpoint(ctx context.Context, t catalogs.TableIdent, v int64) error {
	st, err := p.load(ctx, t, v)
	if err != nil {
		return err
	}
	log := st.dir + "/_delta_log/"
	var last []byte
	if st.snap.Protocol.Supports(dcodec.FeatureV2Checkpoint) {
		cp, err := dcodec.EncodeV2Checkpoint(st.snap, p.now(), uuid.NewString(), uuid.NewString())
		if err != nil {
			return err
		}
		// The sidecar first: the top-level file makes the checkpoint
		// visible, and must never name a sidecar not there yet. A sidecar
		// whose top-level file never landed is an orphan metadata cleanup
		// deletes after a day.
		if cp.SidecarName != "" {
			if err := p.fs.Put(ctx, log+dcodec.SidecarDir+"/"+cp.SidecarName, cp.Sidecar); err != nil {
				return lake.MapErr(err, fmt.Sprintf("table %s: write checkpoint %d: sidecar", t, v))
			}
		}
		if err := p.fs.Put(ctx, log+cp.Name, cp.Parquet); err != nil {
			return lake.MapErr(err, fmt.Sprintf("table %s: write checkpoint %d", t, v))
		}
		last = cp.Last
	} else {
		cp, err := dcodec.EncodeCheckpoint(st.snap, p.now())
		if err != nil {
			return err
		}
		// Two writers of one classic checkpoint write the same state: the
		// protocol lets the later one win, so a plain atomic put is right.
		if err := p.fs.Put(ctx, log+dcodec.ClassicCheckpointName(v), cp.Parquet); err != nil {
			return lake.MapErr(err, fmt.Sprintf("table %s: write checkpoint %d", t, v))
		}
		last = cp.Last
	}
	// _last_checkpoint is a hint readers start listing from: never move
	// it back past a newer checkpoint another writer made meanwhile.
	if b, err := p.fs.Read(ctx, log+dcodec.LastCheckpointName); err == nil {
		if lc, err := dcodec.ParseLastCheckpoint(b); err == nil && lc.Version >= v {
			return nil
		}
	}
	if err := p.fs.Put(ctx, log+dcodec.LastCheckpointName, last); err != nil {
		return lake.MapErr(err, fmt.Sprintf("table %s: write %s", t, dcodec.LastCheckpointName))
	}
	return nil
}
