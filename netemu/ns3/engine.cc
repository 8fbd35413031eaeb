// engine.cc -- ns-3 (3.37) as netemu's packet-level network engine (netemu.ns3).
//
// A subprocess that netemu drives in lockstep with its virtual clock over a line protocol
// (stdin: commands, stdout: answers; one line each, times in integer nanoseconds):
//
//   setup, before `build`:
//     tcp MSS IW BUF RTO_MIN_NS DEL_ACK TIMEOUT_NS CC SACK
//                                             TCP settings (SegmentSize, InitialCwnd, Snd/RcvBufSize, MinRto,
//                                             DelAckCount, congestion control cubic|newreno|bbr|vegas, Sack
//                                             0|1); a connection whose receiver gets no byte for TIMEOUT_NS
//                                             while messages wait fails them (-1: never)
//     queue fifo|fq_codel                     fifo: ns-3's default FqCoDel root queue discs are uninstalled
//     nodes N                                 netemu's nodes (actors, routers, access points) are 0 .. N-1
//     link A B RATE_AB RATE_BA DELAY_NS QAB QBA LOSS_AB LOSS_BA
//                                             a point-to-point link: DataRate per direction (bit/s), one
//                                             propagation delay, device queue sizes ("100p", "15000B") and
//                                             per-packet loss rates (applied by the receiving device)
//     outage A B START_NS END_NS              direction A->B loses every packet in [START, END) (END -1: for ever)
//     pcap PREFIX A B                         write the pcap of both ends of link A-B (PREFIX-A-B-*.pcap)
//     seed RUN                                ns-3's run number (RngSeedManager::SetRun)
//     build                                   -> "ok"  (or "error TEXT")
//   during the run:
//     send ID SRC DST BYTES CONN LAST         message ID (BYTES of TCP payload) on connection CONN (a key
//                                             netemu chooses: one per ordered pair, or one per message) at
//                                             the current ns-3 time; LAST 1: the connection's last message
//                                             (closed, FIN, once it is written; the key's next one opens anew)
//     datagram ID SRC DST BYTES               message ID as UDP packets of at most MSS bytes, written now
//                                             and sent as fast as the source's link takes them
//     rate A B BPS / delay A B NS / loss A B P / outage A B START_NS END_NS
//                                             from now on: direction A->B's DataRate, the link's delay (both
//                                             directions: one channel), A->B's loss rate; another outage window
//     crash N / recover N                     node N goes down: its links lose every packet (UDP: "crash") and
//                                             the connections it is an end of fail ("crash"), their packets
//                                             lost for good (its TCP state is gone); / its links come back up
//     run T_NS                                run until T_NS (-1: no limit) or until an instant at which
//                                             messages completed, whichever is first; answers
//                                             "done ID T_NS" / "fail ID T_NS REASON" lines, then "at T_NS"
//     quit
//
// Every message completes exactly once: "done" when its receiver holds all its bytes, or "fail"
// (TCP: timeout, its connection delivered nothing for TIMEOUT_NS; reset, TCP gave up on the
// connection; UDP: loss or outage, a link lost one of its packets; queue, a full queue dropped one).  Co-simulation is
// conservative: ns-3 never runs past an instant at which netemu may start a message (netemu asks
// for `run` only up to its own next event), so completions are exact to ns-3's 1 ns resolution.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

void DatagramLost(Ptr<const Packet> p, const std::string& reason);
bool Dead(Ptr<const Packet> p);
std::set<std::pair<uint32_t, uint16_t>> dead; // (node, port) of the TCP senders of connections a crash ended

// The message a datagram's packet belongs to (the datagram transport: UDP).
class MessageTag : public Tag
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("NetemuMessageTag").SetParent<Tag>().AddConstructor<MessageTag>();
        return tid;
    }

    TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    uint32_t GetSerializedSize() const override
    {
        return 8;
    }

    void Serialize(TagBuffer b) const override
    {
        b.WriteU64(id);
    }

    void Deserialize(TagBuffer b) override
    {
        id = b.ReadU64();
    }

    void Print(std::ostream& os) const override
    {
        os << "message=" << id;
    }

    uint64_t id = 0;
};

NS_OBJECT_ENSURE_REGISTERED(MessageTag);

// Per-packet loss (Bernoulli, own stream) and outage windows of one direction of a link.
class NetemuErrorModel : public ErrorModel
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("NetemuErrorModel").SetParent<ErrorModel>().AddConstructor<NetemuErrorModel>();
        return tid;
    }

    double rate = 0.0;
    int down = 0;                                     // crashed ends of the link (`crash`)
    std::vector<std::pair<int64_t, int64_t>> outages; // [start, end) in ns
    Ptr<UniformRandomVariable> uniform = CreateObject<UniformRandomVariable>();

  private:
    bool DoCorrupt(Ptr<Packet> p) override
    {
        if (down > 0)
        {
            DatagramLost(p, "crash");
            return true;
        }
        if (!dead.empty() && Dead(p))
        {
            return true;
        }
        const int64_t now = Simulator::Now().GetNanoSeconds();
        for (const auto& w : outages)
        {
            if (w.first <= now && (w.second < 0 || now < w.second))
            {
                DatagramLost(p, "outage");
                return true;
            }
        }
        if (rate > 0 && uniform->GetValue() < rate)
        {
            DatagramLost(p, "loss");
            return true;
        }
        return false;
    }

    void DoReset() override
    {
    }
};

NS_OBJECT_ENSURE_REGISTERED(NetemuErrorModel);

const uint16_t PORT = 9;
const uint16_t UDP_PORT = 10;
uint32_t mss = 1448;

struct Message
{
    uint64_t id;
    uint64_t end; // byte offset of its last byte + 1 in its connection's stream
};

// One TCP connection: netemu's connection key names the current one (`current`); a connection that
// failed is left to its sockets and a new one opened for the key's next message.
struct Conn
{
    Ptr<Socket> sender;
    uint32_t src = 0, dst = 0; // its ends (nodes)
    uint16_t port = 0;         // the sender's local port
    bool connected = false;
    bool broken = false;
    bool closeWhenWritten = false; // a per-message connection: closed (FIN) once its message is written
    uint64_t queued = 0;   // bytes handed to the connection (sum of its messages)
    uint64_t written = 0;  // bytes written into the sender's socket
    uint64_t received = 0; // bytes the receiver has read
    std::deque<Message> messages; // not yet whole at the receiver, in order
    EventId stall;                // fires when no byte arrived for `timeout` while messages wait
    int64_t progress = 0;         // ns: the last byte received, or the last message sent to an idle connection
};

struct Out
{
    uint64_t id;
    int64_t t;
    std::string what; // "done" or "fail REASON"
};

std::vector<Ptr<Node>> nodes;
std::map<uint64_t, Conn> conns;                     // connection -> its state
std::map<uint64_t, uint64_t> current;               // netemu's connection key -> its current connection
uint64_t nextConn = 0;
int64_t timeout = -1;                               // ns without progress after which a connection's messages fail (-1: never)
std::map<std::pair<uint32_t, uint16_t>, uint64_t> byPort; // (sender node, local port) -> connection
std::map<Ptr<Socket>, uint64_t> receivers;          // accepted socket -> connection
std::map<uint32_t, uint32_t> nodeOfIp;              // IPv4 address -> node
std::vector<Ipv4Address> addressOf;                 // node -> its first address
std::vector<Out> out;
struct Datagram
{
    uint64_t bytes, received;
    uint32_t src, dst;
};

std::map<uint64_t, Datagram> datagrams;             // message in flight -> its bytes, bytes received, ends
std::vector<Ptr<Socket>> udpOut;                    // node -> its sending UDP socket (made when first needed)

void
Report(uint64_t id, const std::string& what)
{
    out.push_back({id, Simulator::Now().GetNanoSeconds(), what});
    Simulator::Stop();
}

void
Fill(uint64_t conn)
{
    Conn& c = conns[conn];
    if (!c.connected || c.broken)
    {
        return;
    }
    while (c.written < c.queued)
    {
        uint32_t room = c.sender->GetTxAvailable();
        if (room == 0)
        {
            return;
        }
        uint64_t n = std::min<uint64_t>(room, c.queued - c.written);
        int sent = c.sender->Send(Create<Packet>(static_cast<uint32_t>(n)));
        if (sent <= 0)
        {
            return;
        }
        c.written += static_cast<uint64_t>(sent);
    }
    if (c.closeWhenWritten)
    {
        c.sender->Close(); // its FIN follows the last byte, as an application that is done sending does
    }
}

void
Fail(uint64_t conn, const std::string& reason)
{
    Conn& c = conns[conn];
    if (c.broken)
    {
        return;
    }
    c.broken = true;
    Simulator::Cancel(c.stall);
    for (const Message& m : c.messages)
    {
        Report(m.id, "fail " + reason);
    }
    c.messages.clear();
    c.sender->Close();
}

void Stalled(uint64_t conn);

// Start the stall timer of a connection that has messages waiting and none running.  Progress only
// moves `progress`: the timer, when it fires, looks at it and waits again if bytes came meanwhile
// (one event per `timeout`, not one per packet received).
void
Arm(uint64_t conn)
{
    Conn& c = conns[conn];
    c.progress = Simulator::Now().GetNanoSeconds();
    if (timeout >= 0 && !c.messages.empty() && !c.broken && !c.stall.IsRunning())
    {
        c.stall = Simulator::Schedule(NanoSeconds(timeout), &Stalled, conn);
    }
}

void
Stalled(uint64_t conn)
{
    Conn& c = conns[conn];
    if (c.messages.empty() || c.broken)
    {
        return;
    }
    const int64_t quiet = Simulator::Now().GetNanoSeconds() - c.progress;
    if (quiet < timeout)
    {
        c.stall = Simulator::Schedule(NanoSeconds(timeout - quiet), &Stalled, conn);
        return;
    }
    Fail(conn, "timeout");
}

void
Received(uint64_t conn, uint64_t bytes)
{
    auto it = conns.find(conn);
    if (it == conns.end() || it->second.broken)
    {
        return;
    }
    Conn& c = it->second;
    c.received += bytes;
    while (!c.messages.empty() && c.received >= c.messages.front().end)
    {
        Report(c.messages.front().id, "done");
        c.messages.pop_front();
    }
    Arm(conn);
}

void
Recv(Ptr<Socket> s)
{
    Ptr<Packet> p;
    uint64_t n = 0;
    while ((p = s->Recv()))
    {
        n += p->GetSize();
    }
    auto it = receivers.find(s);
    if (it != receivers.end() && n)
    {
        Received(it->second, n);
    }
}

void
Forget(Ptr<Socket> s)
{
    receivers.erase(s);
}

void
Accept(Ptr<Socket> s, const Address& from)
{
    InetSocketAddress a = InetSocketAddress::ConvertFrom(from);
    auto node = nodeOfIp.find(a.GetIpv4().Get());
    if (node == nodeOfIp.end())
    {
        return;
    }
    auto conn = byPort.find({node->second, a.GetPort()});
    if (conn == byPort.end())
    {
        return;
    }
    receivers[s] = conn->second;
    s->SetRecvCallback(MakeCallback(&Recv));
    s->SetCloseCallbacks(MakeCallback(&Forget), MakeCallback(&Forget));
}

void
Connected(uint64_t conn, Ptr<Socket>)
{
    conns[conn].connected = true;
    Fill(conn);
}

void
Closed(uint64_t conn, Ptr<Socket>)
{
    dead.erase({conns[conn].src, conns[conn].port}); // its packets are gone with it
}

void
Broken(uint64_t conn, Ptr<Socket> s)
{
    Fail(conn, "reset");
    Closed(conn, s);
}

void
Room(uint64_t conn, Ptr<Socket>, uint32_t)
{
    Fill(conn);
}


uint64_t
Open(uint32_t src, uint32_t dst)
{
    uint64_t conn = nextConn++;
    Conn& c = conns[conn];
    c.sender = Socket::CreateSocket(nodes[src], TcpSocketFactory::GetTypeId());
    c.sender->Bind();
    Address local;
    c.sender->GetSockName(local);
    c.src = src;
    c.dst = dst;
    c.port = InetSocketAddress::ConvertFrom(local).GetPort();
    byPort[{src, c.port}] = conn;
    dead.erase({src, c.port}); // a port used again: the connection that had it is over
    c.sender->SetConnectCallback(MakeBoundCallback(&Connected, conn), MakeBoundCallback(&Broken, conn));
    c.sender->SetSendCallback(MakeBoundCallback(&Room, conn));
    c.sender->SetCloseCallbacks(MakeBoundCallback(&Closed, conn), MakeBoundCallback(&Broken, conn));
    c.sender->Connect(InetSocketAddress(addressOf[dst], PORT));
    return conn;
}

void
Send(uint64_t id, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t key, bool last)
{
    auto it = current.find(key);
    if (it == current.end() || conns[it->second].broken)
    {
        current[key] = Open(src, dst);
    }
    uint64_t conn = current[key];
    Conn& c = conns[conn];
    c.queued += bytes;
    c.closeWhenWritten = last;
    bool idle = c.messages.empty();
    c.messages.push_back({id, c.queued});
    if (idle)
    {
        Arm(conn);
    }
    Fill(conn);
    if (last)
    {
        current.erase(key);
    }
}

void
DatagramLost(Ptr<const Packet> p, const std::string& reason)
{
    MessageTag tag;
    if (!p->PeekPacketTag(tag))
    {
        return; // a TCP packet: TCP answers its loss itself
    }
    auto it = datagrams.find(tag.id);
    if (it != datagrams.end())
    {
        datagrams.erase(it);
        Report(tag.id, "fail " + reason);
    }
}

void
QueueDrop(Ptr<const Packet> p)
{
    DatagramLost(p, "queue");
}

// A packet IP dropped on its way (no route at a router, TTL): a datagram's is lost
void
IpDrop(const Ipv4Header&, Ptr<const Packet> p, Ipv4L3Protocol::DropReason, Ptr<Ipv4>, uint32_t)
{
    DatagramLost(p, "loss");
}

void
QueueDiscDrop(Ptr<const QueueDiscItem> item)
{
    DatagramLost(item->GetPacket(), "queue");
}

void
DatagramRecv(Ptr<Socket> s)
{
    Ptr<Packet> p;
    while ((p = s->Recv()))
    {
        MessageTag tag;
        if (!p->PeekPacketTag(tag))
        {
            continue;
        }
        auto it = datagrams.find(tag.id);
        if (it == datagrams.end())
        {
            continue; // a packet of a message already lost
        }
        it->second.received += p->GetSize();
        if (it->second.received >= it->second.bytes)
        {
            datagrams.erase(it);
            Report(tag.id, "done");
        }
    }
}

// The device a packet from `src` to `dst` leaves by (ns-3's routes), or null.
Ptr<PointToPointNetDevice>
OutDevice(uint32_t src, uint32_t dst)
{
    Ptr<Ipv4> ipv4 = nodes[src]->GetObject<Ipv4>();
    Ipv4Header header;
    header.SetDestination(addressOf[dst]);
    header.SetProtocol(UdpL4Protocol::PROT_NUMBER);
    Socket::SocketErrno error;
    Ptr<Ipv4Route> route = ipv4->GetRoutingProtocol()->RouteOutput(nullptr, header, nullptr, error);
    return route ? DynamicCast<PointToPointNetDevice>(route->GetOutputDevice()) : nullptr;
}

struct Backlogged
{
    uint64_t id;
    uint32_t dst;
    uint32_t size;
};

std::vector<std::deque<Backlogged>> udpBacklog; // node -> datagram packets its application wrote, not yet sent
std::vector<EventId> udpDrain;                  // node -> the pending retry of its backlog

// Send node `src`'s backlog while the device its packets leave by has room, as a UDP socket whose
// writer blocks on a full interface queue (Linux: the socket's send buffer and TSQ) does: the sender
// is paced by its own link, and packets are lost in the network, not at their source.
void
Drain(uint32_t src)
{
    auto& backlog = udpBacklog[src];
    while (!backlog.empty())
    {
        Backlogged b = backlog.front();
        if (!datagrams.count(b.id))
        {
            backlog.pop_front(); // a packet of a message already lost: not sent
            continue;
        }
        Ptr<PointToPointNetDevice> dev = OutDevice(src, b.dst);
        const uint32_t wire = b.size + 30; // UDP, IPv4 and PPP headers
        if (dev && dev->GetQueue()->WouldOverflow(1, wire))
        {
            DataRateValue rate;
            dev->GetAttribute("DataRate", rate);
            udpDrain[src] = Simulator::Schedule(rate.Get().CalculateBytesTxTime(wire), &Drain, src);
            return;
        }
        backlog.pop_front();
        Ptr<Packet> p = Create<Packet>(b.size);
        MessageTag tag;
        tag.id = b.id;
        p->AddPacketTag(tag);
        if (udpOut[src]->SendTo(p, 0, InetSocketAddress(addressOf[b.dst], UDP_PORT)) < 0)
        {
            DatagramLost(p, "loss"); // no route from its source: lost, not left in flight
        }
    }
}

// A datagram message: its bytes as UDP packets of at most `mss` bytes, written at once to the source's
// socket and sent as fast as its link takes them (`Drain`; no retransmission).  Delivered when every
// packet arrived; lost at the first packet a link loses (loss, outage) or a full queue drops (queue).
void
SendDatagram(uint64_t id, uint32_t src, uint32_t dst, uint64_t bytes)
{
    if (!udpOut[src])
    {
        udpOut[src] = Socket::CreateSocket(nodes[src], UdpSocketFactory::GetTypeId());
        udpOut[src]->Bind();
    }
    datagrams[id] = {bytes, 0, src, dst};
    for (uint64_t sent = 0; sent < bytes;)
    {
        uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(mss, bytes - sent));
        udpBacklog[src].push_back({id, dst, n});
        sent += n;
    }
    if (!udpDrain[src].IsRunning())
    {
        Drain(src);
    }
}

// One direction of a link: the device that sends, the one that receives (and drops what its error
// model says), their channel, and the error model (made when first needed).
struct Dir
{
    Ptr<PointToPointNetDevice> tx;
    Ptr<NetDevice> rx;
    Ptr<Channel> channel;
    Ptr<NetemuErrorModel> em;
};

std::map<std::pair<uint32_t, uint32_t>, Dir> dirs; // (A, B) -> direction A->B
int64_t stream = 1000;                             // the next error model's random stream

Ptr<NetemuErrorModel>
ErrorsOf(Dir& d)
{
    if (!d.em)
    {
        d.em = CreateObject<NetemuErrorModel>();
        d.em->uniform->SetStream(stream++);
        d.rx->SetAttribute("ReceiveErrorModel", PointerValue(d.em));
    }
    return d.em;
}

// Whether `p` (as a receiving device sees it: PPP, IPv4, TCP) belongs to a connection a crash ended.
bool
Dead(Ptr<const Packet> p)
{
    Ptr<Packet> q = p->Copy();
    PppHeader ppp;
    Ipv4Header ip;
    TcpHeader tcp;
    if (!q->RemoveHeader(ppp) || ppp.GetProtocol() != 0x0021 || !q->RemoveHeader(ip) || ip.GetProtocol() != 6 ||
        !q->PeekHeader(tcp))
    {
        return false;
    }
    auto s = nodeOfIp.find(ip.GetSource().Get());
    auto d = nodeOfIp.find(ip.GetDestination().Get());
    return (s != nodeOfIp.end() && dead.count({s->second, tcp.GetSourcePort()})) ||
           (d != nodeOfIp.end() && dead.count({d->second, tcp.GetDestinationPort()}));
}

// Node `node` crashes: its links lose every packet until it recovers, and what it was sending or
// receiving ends ("crash").  A crashed host's TCP state is gone, so the packets of its connections are
// lost for good, at both ends (a peer's socket gives up after its retries): they never resume.
void
Crash(uint32_t node)
{
    for (auto& [ends, d] : dirs)
    {
        if (ends.first == node || ends.second == node)
        {
            ErrorsOf(d)->down++;
        }
    }
    for (auto& [id, c] : conns)
    {
        if (!c.broken && (c.src == node || c.dst == node))
        {
            dead.insert({c.src, c.port});
            Fail(id, "crash");
        }
    }
    for (auto it = datagrams.begin(); it != datagrams.end();)
    {
        if (it->second.src == node || it->second.dst == node)
        {
            Report(it->first, "fail crash");
            it = datagrams.erase(it);
        }
        else
        {
            ++it;
        }
    }
}

void
Recover(uint32_t node)
{
    for (auto& [ends, d] : dirs)
    {
        if ((ends.first == node || ends.second == node) && d.em && d.em->down > 0)
        {
            d.em->down--;
        }
    }
}

// A change of link A->B from now on (`rate`, `delay`, `loss`, `outage`); false: bad line.
bool
Change(const std::string& cmd, std::istringstream& in)
{
    uint32_t a, b;
    in >> a >> b;
    auto it = dirs.find({a, b});
    if (!in || it == dirs.end())
    {
        return false;
    }
    Dir& d = it->second;
    if (cmd == "rate")
    {
        uint64_t bps;
        in >> bps;
        d.tx->SetDataRate(DataRate(bps));
    }
    else if (cmd == "delay")
    {
        int64_t ns;
        in >> ns;
        d.channel->SetAttribute("Delay", TimeValue(NanoSeconds(ns)));
    }
    else if (cmd == "loss")
    {
        double rate;
        in >> rate;
        ErrorsOf(d)->rate = rate;
    }
    else
    {
        int64_t start, end;
        in >> start >> end;
        ErrorsOf(d)->outages.push_back({start, end});
    }
    return static_cast<bool>(in);
}

bool stopped = false;

void
Halt()
{
    stopped = true;
    Simulator::Stop();
}

void
Run(int64_t until)
{
    // `out` may already hold what happened while a message was sent (a datagram's packet dropped by a
    // full queue as it was written): reported at once, ns-3 not run past it
    const int64_t now = Simulator::Now().GetNanoSeconds();
    if (out.empty() && (until < 0 || until > now))
    {
        EventId stop;
        if (until >= 0)
        {
            stop = Simulator::Schedule(NanoSeconds(until - now), &Halt);
        }
        Simulator::Run();
        Simulator::Cancel(stop);
    }
    for (const Out& o : out)
    {
        if (o.what == "done")
        {
            std::printf("done %llu %lld\n", static_cast<unsigned long long>(o.id), static_cast<long long>(o.t));
        }
        else
        {
            std::printf("fail %llu %lld %s\n", static_cast<unsigned long long>(o.id), static_cast<long long>(o.t),
                        o.what.substr(5).c_str());
        }
    }
    out.clear();
    std::printf("at %lld\n", static_cast<long long>(Simulator::Now().GetNanoSeconds()));
    std::fflush(stdout);
}

struct LinkSpec
{
    uint32_t a, b;
    uint64_t rateAB, rateBA;
    int64_t delay;
    std::string qAB, qBA;
    double lossAB, lossBA;
    std::vector<std::pair<int64_t, int64_t>> outAB, outBA;
    std::string pcap;
};

} // namespace

int
main(int argc, char* argv[])
{
    std::ios::sync_with_stdio(false);
    std::string queueDisc = "fifo";
    uint32_t n = 0;
    std::vector<LinkSpec> links;
    std::string line;
    while (std::getline(std::cin, line))
    {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        if (cmd == "tcp")
        {
            uint32_t iw, buf, delAck, sack;
            int64_t rtoMin;
            std::string cc;
            in >> mss >> iw >> buf >> rtoMin >> delAck >> timeout >> cc >> sack;
            const std::map<std::string, TypeId> controls = {{"cubic", TcpCubic::GetTypeId()}, {"newreno", TcpNewReno::GetTypeId()},
                                                            {"bbr", TcpBbr::GetTypeId()}, {"vegas", TcpVegas::GetTypeId()}};
            if (!in || !controls.count(cc))
            {
                std::printf("error bad tcp line: %s\n", line.c_str());
                std::fflush(stdout);
                return 2;
            }
            Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(controls.at(cc)));
            Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack != 0));
            Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
            Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(iw));
            Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(buf));
            Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(buf));
            Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delAck));
            Config::SetDefault("ns3::TcpSocket::TcpNoDelay", BooleanValue(true));
            Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(NanoSeconds(rtoMin)));
        }
        else if (cmd == "queue")
        {
            in >> queueDisc;
        }
        else if (cmd == "nodes")
        {
            in >> n;
        }
        else if (cmd == "seed")
        {
            uint32_t run;
            in >> run;
            RngSeedManager::SetSeed(1);
            RngSeedManager::SetRun(run);
        }
        else if (cmd == "link")
        {
            LinkSpec l;
            in >> l.a >> l.b >> l.rateAB >> l.rateBA >> l.delay >> l.qAB >> l.qBA >> l.lossAB >> l.lossBA;
            links.push_back(l);
        }
        else if (cmd == "outage" || cmd == "pcap")
        {
            std::string prefix;
            if (cmd == "pcap")
            {
                in >> prefix;
            }
            uint32_t a, b;
            int64_t s = 0, e = 0;
            in >> a >> b;
            if (cmd == "outage")
            {
                in >> s >> e;
            }
            bool found = false;
            for (LinkSpec& l : links)
            {
                if ((l.a == a && l.b == b) || (l.a == b && l.b == a))
                {
                    found = true;
                    if (cmd == "pcap")
                    {
                        l.pcap = prefix;
                    }
                    else
                    {
                        (l.a == a ? l.outAB : l.outBA).push_back({s, e});
                    }
                }
            }
            if (!found)
            {
                std::printf("error %s names no link %u-%u\n", cmd.c_str(), a, b);
                std::fflush(stdout);
                return 2;
            }
        }
        else if (cmd == "build")
        {
            break;
        }
        else if (!cmd.empty())
        {
            std::printf("error unknown setup command %s\n", cmd.c_str());
            std::fflush(stdout);
            return 2;
        }
    }

    NodeContainer all;
    all.Create(n);
    for (uint32_t i = 0; i < n; i++)
    {
        nodes.push_back(all.Get(i));
    }
    InternetStackHelper stack;
    stack.Install(all);
    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.252");
    NetDeviceContainer devices;
    addressOf.assign(n, Ipv4Address());
    std::vector<bool> addressed(n, false);
    for (LinkSpec& l : links)
    {
        PointToPointHelper p2p;
        p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(l.delay)));
        NetDeviceContainer d = p2p.Install(nodes[l.a], nodes[l.b]);
        auto setUp = [&](uint32_t i, uint64_t rate, const std::string& q, double loss,
                         const std::vector<std::pair<int64_t, int64_t>>& outages) {
            Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(d.Get(i));
            dev->SetDataRate(DataRate(rate));
            dev->GetQueue()->SetAttribute("MaxSize", QueueSizeValue(QueueSize(q)));
            // the other end receives what this device sends (and loses what its error model says)
            Dir& dir = dirs[i == 0 ? std::make_pair(l.a, l.b) : std::make_pair(l.b, l.a)];
            dir = {dev, d.Get(1 - i), dev->GetChannel(), nullptr};
            if (loss > 0 || !outages.empty())
            {
                Ptr<NetemuErrorModel> em = ErrorsOf(dir);
                em->rate = loss;
                em->outages = outages;
            }
        };
        setUp(0, l.rateAB, l.qAB, l.lossAB, l.outAB);
        setUp(1, l.rateBA, l.qBA, l.lossBA, l.outBA);
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        addr.NewNetwork();
        for (uint32_t i = 0; i < 2; i++)
        {
            uint32_t node = i == 0 ? l.a : l.b;
            nodeOfIp[ifs.GetAddress(i).Get()] = node;
            if (!addressed[node])
            {
                addressed[node] = true;
                addressOf[node] = ifs.GetAddress(i);
            }
        }
        devices.Add(d);
        if (!l.pcap.empty())
        {
            p2p.EnablePcap(l.pcap + "-" + std::to_string(l.a) + "-" + std::to_string(l.b), d, false);
        }
    }
    if (queueDisc == "fifo")
    {
        TrafficControlHelper().Uninstall(devices);
    }
    else if (queueDisc != "fq_codel")
    {
        std::printf("error queue must be fifo or fq_codel, not %s\n", queueDisc.c_str());
        std::fflush(stdout);
        return 2;
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    for (uint32_t i = 0; i < n; i++)
    {
        if (!addressed[i])
        {
            continue;
        }
        Ptr<Socket> listen = Socket::CreateSocket(nodes[i], TcpSocketFactory::GetTypeId());
        listen->Bind(InetSocketAddress(Ipv4Address::GetAny(), PORT));
        listen->Listen();
        // A receiving socket only receives (the way back is the pair's other connection), as ns-3's
        // PacketSink: it answers a FIN with its own at once, not from CLOSE_WAIT later.
        listen->ShutdownSend();
        listen->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(), MakeCallback(&Accept));
        Ptr<Socket> udp = Socket::CreateSocket(nodes[i], UdpSocketFactory::GetTypeId());
        udp->Bind(InetSocketAddress(Ipv4Address::GetAny(), UDP_PORT));
        udp->SetRecvCallback(MakeCallback(&DatagramRecv));
    }
    udpOut.assign(n, nullptr);
    udpBacklog.assign(n, {});
    udpDrain.assign(n, EventId());
    // A datagram's packet dropped by a full queue: the device's (FIFO) or the traffic-control layer's
    // (a stopped device queue, no queue disc), or the root queue disc's (fq_codel)
    for (uint32_t i = 0; i < devices.GetN(); i++)
    {
        Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(devices.Get(i));
        dev->GetQueue()->TraceConnectWithoutContext("Drop", MakeCallback(&QueueDrop));
        Ptr<TrafficControlLayer> tc = dev->GetNode()->GetObject<TrafficControlLayer>();
        Ptr<QueueDisc> disc = tc ? tc->GetRootQueueDiscOnDevice(dev) : nullptr;
        if (disc)
        {
            disc->TraceConnectWithoutContext("Drop", MakeCallback(&QueueDiscDrop));
        }
    }
    for (uint32_t i = 0; i < n; i++)
    {
        Ptr<TrafficControlLayer> tc = nodes[i]->GetObject<TrafficControlLayer>();
        if (tc)
        {
            tc->TraceConnectWithoutContext("TcDrop", MakeCallback(&QueueDrop));
        }
        nodes[i]->GetObject<Ipv4L3Protocol>()->TraceConnectWithoutContext("Drop", MakeCallback(&IpDrop));
    }
    // Initialize the nodes (their devices, stacks and traffic-control layers: Node::Initialize events at
    // t = 0) before the first message, as a program whose applications start at t = 0 has them.
    Simulator::Schedule(Seconds(0), &Halt);
    Simulator::Run();
    std::printf("ok\n");
    std::fflush(stdout);

    while (std::getline(std::cin, line))
    {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        if (cmd == "send")
        {
            uint64_t id, bytes, key;
            uint32_t src, dst, last;
            in >> id >> src >> dst >> bytes >> key >> last;
            if (!in || src >= n || dst >= n || !addressed[dst])
            {
                std::printf("error bad send: %s\n", line.c_str());
                std::fflush(stdout);
                return 2;
            }
            Send(id, src, dst, bytes, key, last != 0);
        }
        else if (cmd == "datagram")
        {
            uint64_t id, bytes;
            uint32_t src, dst;
            in >> id >> src >> dst >> bytes;
            if (!in || src >= n || dst >= n || !addressed[dst])
            {
                std::printf("error bad datagram: %s\n", line.c_str());
                std::fflush(stdout);
                return 2;
            }
            SendDatagram(id, src, dst, bytes);
        }
        else if (cmd == "rate" || cmd == "delay" || cmd == "loss" || cmd == "outage")
        {
            if (!Change(cmd, in))
            {
                std::printf("error bad %s: %s\n", cmd.c_str(), line.c_str());
                std::fflush(stdout);
                return 2;
            }
        }
        else if (cmd == "crash" || cmd == "recover")
        {
            uint32_t node;
            in >> node;
            if (!in || node >= n)
            {
                std::printf("error bad %s: %s\n", cmd.c_str(), line.c_str());
                std::fflush(stdout);
                return 2;
            }
            cmd == "crash" ? Crash(node) : Recover(node);
        }
        else if (cmd == "run")
        {
            int64_t until;
            in >> until;
            Run(until);
        }
        else if (cmd == "quit")
        {
            break;
        }
        else if (!cmd.empty())
        {
            std::printf("error unknown command %s\n", cmd.c_str());
            std::fflush(stdout);
            return 2;
        }
    }
    Simulator::Destroy();
    return 0;
}
