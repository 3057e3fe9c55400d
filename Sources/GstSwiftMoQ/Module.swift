import CGStreamer
import CGstBase
import CGstApp
import CGstVideo
import CGstAudio
import CGstPbutils
func _probe() { gst_init(nil, nil) }
