// engine.cc -- ns-3 (3.37) as netemu's packet-level network engine (netemu.ns3).
//
// A subprocess that netemu drives in lockstep with its virtual clock over a line protocol
// (stdin: commands, stdout: answers; one line each, times in integer nanoseconds):
//
//   setup, before `build`:
//     tcp MSS IW BUF RTO_MIN_NS DEL_ACK DEL_ACK_NS TIMEOUT_NS CC SACK
//                                             TCP settings (SegmentSize, InitialCwnd, Snd/RcvBufSize, MinRto,
//                                             DelAckCount, DelAckTimeout, congestion control cubic|newreno|bbr|vegas, Sack
//                                             0|1); a connection whose receiver gets no byte for TIMEOUT_NS
//                                             while messages wait fails them (-1: never)
//     nodes N                                 netemu's nodes (actors, routers, access points) are 0 .. N-1
//     link A B RATE_AB RATE_BA DELAY_NS QAB QBA LOSS_AB LOSS_BA DISC_AB DISC_BA
//                                             a point-to-point link: DataRate per direction (bit/s), one
//                                             propagation delay, device queue sizes ("100p", "15000B"),
//                                             per-packet loss rates (applied by the receiving device) and
//                                             each sending device's queue discipline: fq_codel (ns-3's default
//                                             FqCoDel root queue disc kept) or fifo (uninstalled: the device's
//                                             DropTail queue alone)
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

#include <cstdarg>
#include <cstdio>
#include <deque>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

#include "state.h"
#include "tcp.h"
#include "udp.h"
#include "links.h"

namespace
{

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
    std::string discAB, discBA; // fifo | fq_codel
    std::vector<std::pair<int64_t, int64_t>> outAB, outBA;
    std::string pcap;
};

// A line the engine cannot take: one "error ..." line on stdout, and the exit status (2) that
// netemu.ns3.process reads as refused input.
int
Refuse(const char* format, ...)
{
    std::printf("error ");
    va_list args;
    va_start(args, format);
    std::vprintf(format, args);
    va_end(args);
    std::printf("\n");
    std::fflush(stdout);
    return 2;
}

} // namespace

int
main(int argc, char* argv[])
{
    std::ios::sync_with_stdio(false);
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
            int64_t rtoMin, delAckTimeout;
            std::string cc;
            in >> mss >> iw >> buf >> rtoMin >> delAck >> delAckTimeout >> timeout >> cc >> sack;
            const std::map<std::string, TypeId> controls = {{"cubic", TcpCubic::GetTypeId()}, {"newreno", TcpNewReno::GetTypeId()},
                                                            {"bbr", TcpBbr::GetTypeId()}, {"vegas", TcpVegas::GetTypeId()}};
            if (!in || !controls.count(cc))
            {
                return Refuse("bad tcp line: %s", line.c_str());
            }
            Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(controls.at(cc)));
            Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack != 0));
            Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
            Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(iw));
            Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(buf));
            Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(buf));
            Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delAck));
            Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(NanoSeconds(delAckTimeout)));
            Config::SetDefault("ns3::TcpSocket::TcpNoDelay", BooleanValue(true));
            Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(NanoSeconds(rtoMin)));
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
            in >> l.a >> l.b >> l.rateAB >> l.rateBA >> l.delay >> l.qAB >> l.qBA >> l.lossAB >> l.lossBA >> l.discAB >> l.discBA;
            for (const std::string& disc : {l.discAB, l.discBA})
            {
                if (disc != "fifo" && disc != "fq_codel")
                {
                    return Refuse("a link's queue discipline must be fifo or fq_codel, not %s", disc.c_str());
                }
            }
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
                return Refuse("%s names no link %u-%u", cmd.c_str(), a, b);
            }
        }
        else if (cmd == "build")
        {
            break;
        }
        else if (!cmd.empty())
        {
            return Refuse("unknown setup command %s", cmd.c_str());
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
    NetDeviceContainer bare; // the devices whose FqCoDel root queue disc is uninstalled (fifo)
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
        for (uint32_t i = 0; i < 2; i++)
        {
            if ((i == 0 ? l.discAB : l.discBA) == "fifo")
            {
                bare.Add(d.Get(i));
            }
        }
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
    // Ipv4AddressHelper::Assign installed ns-3's default FqCoDel root queue disc on every device
    TrafficControlHelper().Uninstall(bare);
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
                return Refuse("bad send: %s", line.c_str());
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
                return Refuse("bad datagram: %s", line.c_str());
            }
            SendDatagram(id, src, dst, bytes);
        }
        else if (cmd == "rate" || cmd == "delay" || cmd == "loss" || cmd == "outage")
        {
            if (!Change(cmd, in))
            {
                return Refuse("bad %s: %s", cmd.c_str(), line.c_str());
            }
        }
        else if (cmd == "crash" || cmd == "recover")
        {
            uint32_t node;
            in >> node;
            if (!in || node >= n)
            {
                return Refuse("bad %s: %s", cmd.c_str(), line.c_str());
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
            return Refuse("unknown command %s", cmd.c_str());
        }
    }
    Simulator::Destroy();
    return 0;
}
