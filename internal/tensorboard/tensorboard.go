// Package tensorboard writes TensorBoard event files: TFRecord files
// (each record a little-endian uint64 length, the masked CRC-32C of those
// 8 bytes, the data, the masked CRC-32C of the data) of TensorBoard's
// Event messages (package tbpb), which TensorBoard's scalar dashboard
// reads. A file starts with the file_version event "brain.Event:2".
package tensorboard

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/lcl-project/lcl/internal/tensorboard/tbpb"
)

// FileVersion is the version an event file's first event names.
const FileVersion = "brain.Event:2"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MaskedCRC is TFRecord's checksum of data: the CRC-32C, rotated right by
// 15 bits, plus 0xa282ead8 (so that a CRC of a CRC is not a CRC).
func MaskedCRC(data []byte) uint32 {
	c := crc32.Checksum(data, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

// WriteRecord writes data as one TFRecord.
func WriteRecord(w io.Writer, data []byte) error {
	var head [12]byte
	binary.LittleEndian.PutUint64(head[:8], uint64(len(data)))
	binary.LittleEndian.PutUint32(head[8:], MaskedCRC(head[:8]))
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], MaskedCRC(data))
	for _, b := range [][]byte{head[:], data, tail[:]} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// Scalar is one tagged value.
type Scalar struct {
	Tag   string
	Value float64
}

// Writer appends events to one event file. Its methods are not safe for
// concurrent use.
type Writer struct {
	f    *os.File
	w    *bufio.Writer
	path string
	now  func() time.Time
	// tagged are the tags whose first value carried the plugin metadata
	// (TensorBoard keeps it from the first value of a tag).
	tagged map[string]bool
}

// Create starts a new event file in dir (created if needed), named as
// TensorBoard's writers name theirs (events.out.tfevents.SECONDS.HOST)
// with the process id and a suffix, so that every start of a run has a
// file of its own; TensorBoard reads every file of the folder in name
// order.
func Create(dir string) (*Writer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	now := time.Now()
	base := "events.out.tfevents." + strconv.FormatInt(now.Unix(), 10) + "." + host + "." + strconv.Itoa(os.Getpid())
	var f *os.File
	var path string
	for i := 0; ; i++ {
		path = filepath.Join(dir, base+"."+strconv.Itoa(i)+".lcl")
		f, err = os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil || !os.IsExist(err) || i > 100 {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("tensorboard: %w", err)
	}
	w := &Writer{f: f, w: bufio.NewWriter(f), path: path, now: time.Now, tagged: map[string]bool{}}
	if err := w.write(&tbpb.Event{WallTime: w.wall(), What: &tbpb.Event_FileVersion{FileVersion: FileVersion}}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Path is the event file's path.
func (w *Writer) Path() string { return w.path }

func (w *Writer) wall() float64 { return float64(w.now().UnixNano()) / 1e9 }

func (w *Writer) write(e *tbpb.Event) error {
	b, err := proto.Marshal(e)
	if err != nil {
		return fmt.Errorf("tensorboard: %w", err)
	}
	if err := WriteRecord(w.w, b); err != nil {
		return fmt.Errorf("tensorboard: %s: %w", w.path, err)
	}
	return nil
}

// Start records a (re)start at step: TensorBoard then drops what earlier
// files logged at this step and after (what a resumed run repeats).
func (w *Writer) Start(step int64) error {
	return w.write(&tbpb.Event{WallTime: w.wall(), Step: step,
		What: &tbpb.Event_SessionLog{SessionLog: &tbpb.SessionLog{Status: tbpb.SessionLog_START}}})
}

// Scalars records values at step, in one event. The first value of a tag
// in the file carries the scalars plugin's metadata, as TensorBoard's own
// writers put it.
func (w *Writer) Scalars(step int64, values ...Scalar) error {
	s := &tbpb.Summary{}
	for _, v := range values {
		sv := &tbpb.Summary_Value{Tag: v.Tag, Value: &tbpb.Summary_Value_SimpleValue{SimpleValue: float32(v.Value)}}
		if !w.tagged[v.Tag] {
			sv.Metadata = &tbpb.SummaryMetadata{PluginData: &tbpb.SummaryMetadata_PluginData{PluginName: "scalars"}}
			w.tagged[v.Tag] = true
		}
		s.Value = append(s.Value, sv)
	}
	return w.write(&tbpb.Event{WallTime: w.wall(), Step: step, What: &tbpb.Event_Summary{Summary: s}})
}

// Flush writes buffered events to the file.
func (w *Writer) Flush() error {
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("tensorboard: %s: %w", w.path, err)
	}
	return nil
}

// Close flushes and closes the file.
func (w *Writer) Close() error {
	err := w.Flush()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("tensorboard: %w", cerr)
	}
	return err
}
