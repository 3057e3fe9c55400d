import CGStreamer
import CGstApp
import CGstAudio
import CGstBase
import CGstPbutils
import CGstVideo

func _probe() { gst_init(nil, nil) }
