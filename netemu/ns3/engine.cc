// engine.cc -- ns-3 (3.37) as netemu's packet-level network engine (netemu.ns3).
//
// A subprocess that netemu drives in lockstep with its virtual clock over a line protocol
// (stdin: commands, stdout: answers; one line each, times in integer nanoseconds):
//
//   setup, before `build`:
//     tcp MSS IW BUF RTO_MIN_NS DEL_ACK      TCP settings (SegmentSize, InitialCwnd, Snd/RcvBufSize, MinRto, DelAckCount)
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
//     send ID SRC DST BYTES CONN DEADLINE_NS  message ID (BYTES of TCP payload) on connection CONN (a key
//                                             netemu chooses: one per ordered pair, or one per message) at
//                                             the current ns-3 time; dropped (reason timeout) if not whole
//                                             at the receiver by DEADLINE_NS
//     run T_NS                                run until T_NS (-1: no limit) or until an instant at which
//                                             messages completed, whichever is first; answers
//                                             "done ID T_NS" / "fail ID T_NS REASON" lines, then "at T_NS"
//     quit
//
// Every message completes exactly once: "done" when its receiver holds all its bytes, or "fail"
// (timeout: its deadline passed; reset: TCP gave up on its connection).  Co-simulation is
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
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

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
    std::vector<std::pair<int64_t, int64_t>> outages; // [start, end) in ns
    Ptr<UniformRandomVariable> uniform = CreateObject<UniformRandomVariable>();

  private:
    bool DoCorrupt(Ptr<Packet>) override
    {
        const int64_t now = Simulator::Now().GetNanoSeconds();
        for (const auto& w : outages)
        {
            if (w.first <= now && (w.second < 0 || now < w.second))
            {
                return true;
            }
        }
        return rate > 0 && uniform->GetValue() < rate;
    }

    void DoReset() override
    {
    }
};

NS_OBJECT_ENSURE_REGISTERED(NetemuErrorModel);

const uint16_t PORT = 9;

struct Message
{
    uint64_t id;
    uint64_t end; // byte offset of its last byte + 1 in its connection's stream
    bool resolved = false;
    EventId deadline;
};

struct Conn
{
    Ptr<Socket> sender;
    uint32_t src = 0;
    bool connected = false;
    bool broken = false;
    uint64_t queued = 0;   // bytes handed to the connection (sum of its messages)
    uint64_t written = 0;  // bytes written into the sender's socket
    uint64_t received = 0; // bytes the receiver has read
    std::deque<Message> messages; // not yet whole at the receiver, in order
};

struct Out
{
    uint64_t id;
    int64_t t;
    std::string what; // "done" or "fail REASON"
};

std::vector<Ptr<Node>> nodes;
std::map<uint64_t, Conn> conns;                    // netemu's connection key -> connection
std::map<std::pair<uint32_t, uint16_t>, uint64_t> byPort; // (sender node, local port) -> connection key
std::map<Ptr<Socket>, uint64_t> receivers;         // accepted socket -> connection key
std::map<uint32_t, uint32_t> nodeOfIp;             // IPv4 address -> node
std::vector<Ipv4Address> addressOf;                // node -> its first address
std::vector<Out> out;

void
Report(uint64_t id, const std::string& what)
{
    out.push_back({id, Simulator::Now().GetNanoSeconds(), what});
    Simulator::Stop();
}

void
Fill(uint64_t key)
{
    Conn& c = conns[key];
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
}

void
Fail(uint64_t key, const std::string& reason)
{
    Conn& c = conns[key];
    c.broken = true;
    for (Message& m : c.messages)
    {
        if (!m.resolved)
        {
            m.resolved = true;
            Simulator::Cancel(m.deadline);
            Report(m.id, "fail " + reason);
        }
    }
    c.messages.clear();
}

void
Received(uint64_t key, uint64_t bytes)
{
    auto it = conns.find(key);
    if (it == conns.end())
    {
        return;
    }
    Conn& c = it->second;
    c.received += bytes;
    while (!c.messages.empty() && c.received >= c.messages.front().end)
    {
        Message& m = c.messages.front();
        if (!m.resolved)
        {
            Simulator::Cancel(m.deadline);
            Report(m.id, "done");
        }
        c.messages.pop_front();
    }
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
    auto key = byPort.find({node->second, a.GetPort()});
    if (key == byPort.end())
    {
        return;
    }
    receivers[s] = key->second;
    s->SetRecvCallback(MakeCallback(&Recv));
    s->SetCloseCallbacks(MakeCallback(&Forget), MakeCallback(&Forget));
}

void
Deadline(uint64_t key, uint64_t id)
{
    Conn& c = conns[key];
    for (Message& m : c.messages)
    {
        if (m.id == id && !m.resolved)
        {
            m.resolved = true; // its bytes stay in the stream: later messages still need them
            Report(id, "fail timeout");
        }
    }
}

void
Connected(uint64_t key, Ptr<Socket>)
{
    conns[key].connected = true;
    Fill(key);
}

void
Broken(uint64_t key, Ptr<Socket>)
{
    Fail(key, "reset");
}

void
Room(uint64_t key, Ptr<Socket>, uint32_t)
{
    Fill(key);
}

void
Closed(uint64_t, Ptr<Socket>)
{
}

void
Open(uint64_t key, uint32_t src, uint32_t dst)
{
    Conn& c = conns[key];
    c = Conn();
    c.src = src;
    c.sender = Socket::CreateSocket(nodes[src], TcpSocketFactory::GetTypeId());
    c.sender->Bind();
    Address local;
    c.sender->GetSockName(local);
    byPort[{src, InetSocketAddress::ConvertFrom(local).GetPort()}] = key;
    c.sender->SetConnectCallback(MakeBoundCallback(&Connected, key), MakeBoundCallback(&Broken, key));
    c.sender->SetSendCallback(MakeBoundCallback(&Room, key));
    c.sender->SetCloseCallbacks(MakeBoundCallback(&Closed, key), MakeBoundCallback(&Broken, key));
    c.sender->Connect(InetSocketAddress(addressOf[dst], PORT));
}

void
Send(uint64_t id, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t key, int64_t deadline)
{
    auto it = conns.find(key);
    if (it == conns.end() || it->second.broken)
    {
        Open(key, src, dst);
    }
    Conn& c = conns[key];
    c.queued += bytes;
    Message m{id, c.queued};
    if (deadline >= 0)
    {
        m.deadline = Simulator::Schedule(NanoSeconds(std::max<int64_t>(0, deadline - Simulator::Now().GetNanoSeconds())),
                                         &Deadline, key, id);
    }
    c.messages.push_back(m);
    Fill(key);
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
    out.clear();
    EventId stop;
    if (until >= 0)
    {
        int64_t now = Simulator::Now().GetNanoSeconds();
        if (until <= now)
        {
            std::printf("at %lld\n", static_cast<long long>(now));
            std::fflush(stdout);
            return;
        }
        stop = Simulator::Schedule(NanoSeconds(until - now), &Halt);
    }
    Simulator::Run();
    Simulator::Cancel(stop);
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
            uint32_t mss, iw, buf, delAck;
            int64_t rtoMin;
            in >> mss >> iw >> buf >> rtoMin >> delAck;
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
    int64_t stream = 1000;
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
            if (loss > 0 || !outages.empty())
            {
                // the other end receives what this device sends
                Ptr<NetemuErrorModel> em = CreateObject<NetemuErrorModel>();
                em->rate = loss;
                em->outages = outages;
                em->uniform->SetStream(stream++);
                d.Get(1 - i)->SetAttribute("ReceiveErrorModel", PointerValue(em));
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
        listen->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(), MakeCallback(&Accept));
    }
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
            uint32_t src, dst;
            int64_t deadline;
            in >> id >> src >> dst >> bytes >> key >> deadline;
            if (!in || src >= n || dst >= n || !addressed[dst])
            {
                std::printf("error bad send: %s\n", line.c_str());
                std::fflush(stdout);
                return 2;
            }
            Send(id, src, dst, bytes, key, deadline);
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
