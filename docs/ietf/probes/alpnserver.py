# SPDX-License-Identifier: MIT
# Usage: PYTHONPATH-free; needs aioquic in /tmp/aioq (pip install --target /tmp/aioq aioquic).
#   python alpnserver.py moqt-16 PORT SECONDS   (comma-separate several ALPNs)
# aioquic server that logs the ALPN list a moq-ffi client offers, accepts ALPN argv[1], and dumps the first control-stream bytes.
import asyncio, sys, datetime, os
sys.path.insert(0, "/tmp/aioq")
from cryptography import x509
from cryptography.x509.oid import NameOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from aioquic.asyncio import serve
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import StreamDataReceived, HandshakeCompleted
import aioquic.tls as tls

orig = tls.Context._server_handle_hello
def hooked(self, input_buf, *rest):
    pos = input_buf.tell()
    hello = tls.pull_client_hello(input_buf); input_buf.seek(pos)
    print("client offers ALPN:", hello.alpn_protocols, flush=True)
    return orig(self, input_buf, *rest)
tls.Context._server_handle_hello = hooked

os.makedirs("/tmp/ietfx", exist_ok=True)
key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
now = datetime.datetime.now(datetime.timezone.utc)
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(1).not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=10))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), False).sign(key, hashes.SHA256()))
open("/tmp/ietfx/c.pem", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open("/tmp/ietfx/k.pem", "wb").write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))

class P(QuicConnectionProtocol):
    def quic_event_received(self, ev):
        if isinstance(ev, HandshakeCompleted): print("negotiated:", ev.alpn_protocol, flush=True)
        if isinstance(ev, StreamDataReceived):
            print(f"stream {ev.stream_id} data: {ev.data.hex()}", flush=True)
            if ev.stream_id == 0 and not getattr(self, "replied", False):
                self.replied = True
                alpn = self._quic.tls.alpn_negotiated
                body = (b"\xc0\x00\x00\x00\xff\x00\x00\x0e" if alpn == "moq-00" else b"") + b"\x00"
                self._quic.send_stream_data(0, b"\x21" + len(body).to_bytes(2, "big") + body); self.transmit()
                print("sent SERVER_SETUP", flush=True)

async def main():
    cfg = QuicConfiguration(is_client=False, alpn_protocols=sys.argv[1].split(","))
    cfg.load_cert_chain("/tmp/ietfx/c.pem", "/tmp/ietfx/k.pem")
    await serve("127.0.0.1", int(sys.argv[2]), configuration=cfg, create_protocol=P)
    print("ready", flush=True)
    await asyncio.sleep(float(sys.argv[3]))
asyncio.run(main())
