package av

// The message (FLV tag) type numbers of media, the one mapping between them
// and kinds: RTMP sessions and pulls (rtmp.EachFrame), the RTMP writers and
// FLV files all go through KindOf and TypeOf.
const (
	TypeAudio    = 8  // RTMP message type / FLV tag type of audio
	TypeVideo    = 9  // … of video
	TypeDataAMF0 = 18 // … of data (script) messages
	TypeDataAMF3 = 15 // RTMP's AMF3 data message: a format byte, then AMF0
)

// KindOf is the kind of frame a message or FLV tag of type typ carries.
func KindOf(typ uint8) (Kind, bool) {
	switch typ {
	case TypeAudio:
		return KindAudio, true
	case TypeVideo:
		return KindVideo, true
	case TypeDataAMF0, TypeDataAMF3:
		return KindData, true
	}
	return 0, false
}

// TypeOf is the message type a frame of kind is sent as (data as AMF0, as
// FMS and every player expect); 0 for kinds that are no message (events).
func TypeOf(kind Kind) uint8 {
	switch kind {
	case KindAudio:
		return TypeAudio
	case KindVideo:
		return TypeVideo
	case KindData:
		return TypeDataAMF0
	}
	return 0
}
