"""WebRTC adapter: browsers and dashboards stream microphone audio over one long
session; a data channel carries control and results, a server audio track carries
spoken replies. Compatible with the Willow Inference Server's WebRTC protocol."""
