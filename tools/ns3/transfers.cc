// transfers.cc -- ns-3 (3.37) reference for netemu's network timing.
//
// Simulates N bulk TCP transfers (one per client) over point-to-point links in
// a star, tree or dumbbell topology, and prints one JSON object on stdout with
// the parameters, the effective TCP settings and each transfer's completion
// time (simulated seconds at which its PacketSink has received all the bytes;
// connection setup included, every transfer starts at t=0).
//
// --direction round is a whole FL round (star and tree): the server sends --bytes to every
// client, and each client, as soon as its download is complete, opens a connection of its
// own and sends --bytes back; a transfer's completion is its upload's ("downloads" has the
// downloads'). --accessSpread K > 1 makes access rates uneven: client k's access link runs
// at access x K^(-k / (clients - 1)), from --access down to --access / K.
//
// Queueing (--qdisc): "fifo" (the default) uses only the point-to-point device's
// DropTailQueue<Packet> (MaxSize = --queue packets). InternetStackHelper aggregates a
// traffic-control layer and Ipv4AddressHelper::Assign installs a default root queue
// disc (FqCoDel) on every device; with "fifo" we uninstall those queue discs right
// after address assignment, so packets go straight from IP to the device queue.
// "fqcodel" keeps ns-3's default FqCoDel queue disc (per-flow fair, CoDel, its own
// 10240-packet limit) in front of the same device queue.
//
// Build: tools/ns3/build.sh   Run: build/transfers --help
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

// Per-run state of the sinks, reached from the Rx trace through a bound pointer.
struct Progress
{
    uint64_t target = 0;                 // bytes each sink must receive
    uint64_t message = 0;                // bytes per message (--messages: the transfer is a stream of them)
    std::vector<std::vector<double>> arrivals; // per transfer: seconds at which each message was complete
    std::vector<uint64_t> received;      // bytes received per transfer
    std::vector<double> completion;      // seconds, < 0 while incomplete
    std::vector<double> first;           // seconds of the first byte, < 0 before
    uint32_t done = 0;
    uint64_t drops = 0;                  // packets dropped by device queues
    bool stopWhenDone = true;            // stop the simulation once every transfer is complete
    std::function<void(uint32_t)> then;  // called when transfer k is complete (--direction round: its upload)
};

void
SinkRx(Progress* p, uint32_t k, Ptr<const Packet> packet, const Address&)
{
    if (p->first[k] < 0)
    {
        p->first[k] = Simulator::Now().GetSeconds();
    }
    p->received[k] += packet->GetSize();
    while (p->message && p->arrivals[k].size() < p->target / p->message &&
           p->received[k] >= (p->arrivals[k].size() + 1) * p->message)
    {
        p->arrivals[k].push_back(Simulator::Now().GetSeconds());
    }
    if (p->completion[k] < 0 && p->received[k] >= p->target)
    {
        p->completion[k] = Simulator::Now().GetSeconds();
        if (p->then)
        {
            p->then(k);
        }
        if (++p->done == p->completion.size() && p->stopWhenDone)
        {
            Simulator::Stop();
        }
    }
}

void
QueueDrop(Progress* p, Ptr<const Packet>)
{
    p->drops++;
}

void
QueueDiscDrop(Progress* p, Ptr<const QueueDiscItem>)
{
    p->drops++;
}

// The effective default of an attribute (after Config::SetDefault), as text.
std::string
AttrDefault(const std::string& tidName, const std::string& attr)
{
    TypeId tid = TypeId::LookupByName(tidName);
    TypeId::AttributeInformation info;
    if (!tid.LookupAttributeByName(attr, &info))
    {
        return "?";
    }
    return info.initialValue->SerializeToString(info.checker);
}

// The effective default of a Time attribute, in seconds.
double
TimeDefault(const std::string& tidName, const std::string& attr)
{
    TypeId tid = TypeId::LookupByName(tidName);
    TypeId::AttributeInformation info;
    tid.LookupAttributeByName(attr, &info);
    Ptr<const TimeValue> v = DynamicCast<const TimeValue>(info.initialValue);
    return v ? v->Get().GetSeconds() : -1.0;
}

std::string
JsonStr(const std::string& s)
{
    std::string out = "\"";
    for (char c : s)
    {
        if (c == '"' || c == '\\')
        {
            out += '\\';
        }
        out += c;
    }
    return out + "\"";
}

std::string
JsonNum(double x)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    return buf;
}

} // namespace

int
main(int argc, char* argv[])
{
    auto wallStart = std::chrono::steady_clock::now();

    std::string topology = "star";
    uint32_t clients = 1;
    uint64_t bytes = 10000000;
    std::string direction = "up";
    uint64_t access = 10000000;
    double accessDelay = 0.001;
    uint64_t server = 20000000;
    double serverDelay = 0.001;
    uint64_t apRate = 100000000;
    double apDelay = 0.001;
    uint32_t clientsPerAp = 8;
    uint32_t queue = 100;
    uint32_t window = 4194304;
    uint32_t seed = 1;
    double startSpread = 0.0;
    double horizon = 3600.0;
    double loss = 0.0; // packet loss rate of each client's access link, in the data's direction
    uint32_t messages = 1; // the transfer is this many messages of --bytes, back to back on one connection
    std::string tcp = "cubic"; // congestion control: cubic (ns-3 3.37's default) or newreno
    bool sack = true;          // SACK (ns-3's default); newreno without SACK is the TCP of Padhye et al.
    std::string qdisc = "fifo"; // fifo: device DropTail queues only; fqcodel: ns-3's default FqCoDel queue disc kept
    double accessSpread = 1.0;  // client k's access rate is access x accessSpread^(-k / (clients - 1))

    CommandLine cmd(__FILE__);
    cmd.AddValue("topology", "star|tree|dumbbell", topology);
    cmd.AddValue("clients", "number of transfers (one per client)", clients);
    cmd.AddValue("bytes", "application bytes per transfer", bytes);
    cmd.AddValue("direction", "up (clients send) | down (server sends) | round (down, then each client sends back)", direction);
    cmd.AddValue("access", "client access link rate, bit/s", access);
    cmd.AddValue("accessDelay", "client access link delay, s", accessDelay);
    cmd.AddValue("server", "server link (dumbbell: bottleneck) rate, bit/s", server);
    cmd.AddValue("serverDelay", "server link (dumbbell: bottleneck) delay, s", serverDelay);
    cmd.AddValue("apRate", "tree: AP <-> router link rate, bit/s", apRate);
    cmd.AddValue("apDelay", "tree: AP <-> router link delay, s", apDelay);
    cmd.AddValue("clientsPerAp", "tree: clients per AP", clientsPerAp);
    cmd.AddValue("queue", "DropTail device queue size, packets", queue);
    cmd.AddValue("window", "TCP SndBufSize and RcvBufSize, bytes", window);
    cmd.AddValue("seed", "RNG run number", seed);
    cmd.AddValue("startSpread", "each transfer starts at a uniform time in [0, startSpread) s (0: all at t=0)", startSpread);
    cmd.AddValue("horizon", "simulated seconds after which to give up", horizon);
    cmd.AddValue("messages", "messages of --bytes each transfer sends back to back on its connection", messages);
    cmd.AddValue("tcp", "congestion control: cubic | newreno", tcp);
    cmd.AddValue("sack", "TCP SACK on (1) or off (0)", sack);
    cmd.AddValue("qdisc", "fifo (device DropTail queues only) | fqcodel (ns-3's default FqCoDel queue disc kept)", qdisc);
    cmd.AddValue("loss", "packet loss rate on each client's access link, data direction (RateErrorModel)", loss);
    cmd.AddValue("accessSpread", "uneven access rates: client k's is access x accessSpread^(-k/(clients-1)) (1: all equal)", accessSpread);
    cmd.Parse(argc, argv);

    if (topology != "star" && topology != "tree" && topology != "dumbbell")
    {
        std::fprintf(stderr, "transfers: --topology must be star, tree or dumbbell\n");
        return 2;
    }
    if (direction != "up" && direction != "down" && direction != "round")
    {
        std::fprintf(stderr, "transfers: --direction must be up, down or round\n");
        return 2;
    }
    const bool round = direction == "round";
    if ((round || accessSpread != 1.0) && topology == "dumbbell")
    {
        std::fprintf(stderr, "transfers: --direction round and --accessSpread are for star and tree only\n");
        return 2;
    }
    if (accessSpread < 1.0 || (round && (loss > 0 || messages > 1)))
    {
        std::fprintf(stderr, "transfers: --accessSpread must be >= 1; --direction round takes no --loss or --messages\n");
        return 2;
    }
    if (qdisc != "fifo" && qdisc != "fqcodel")
    {
        std::fprintf(stderr, "transfers: --qdisc must be fifo or fqcodel\n");
        return 2;
    }
    if (loss < 0 || loss >= 1 || (loss > 0 && topology == "dumbbell"))
    {
        std::fprintf(stderr, "transfers: --loss must be in [0, 1), and only for star and tree\n");
        return 2;
    }
    if (clients < 1 || bytes < 1 || clientsPerAp < 1 || queue < 1 || messages < 1)
    {
        std::fprintf(stderr, "transfers: clients, bytes, clientsPerAp, queue must be >= 1\n");
        return 2;
    }

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    if (tcp != "cubic" && tcp != "newreno")
    {
        std::fprintf(stderr, "transfers: --tcp must be cubic or newreno\n");
        return 2;
    }
    if (tcp == "newreno")
    {
        Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpNewReno::GetTypeId()));
    }
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    const uint32_t segment = 1448;
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segment));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(window));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(window));
    Config::SetDefault("ns3::TcpSocket::TcpNoDelay", BooleanValue(true));

    // Nodes. "A side" = where the clients are; "B side" = the server(s).
    NodeContainer endA;    // clients (dumbbell: senders)
    NodeContainer endB;    // one server, or (dumbbell) one receiver per pair
    NodeContainer routers; // star/tree: router; dumbbell: routerL, routerR
    NodeContainer aps;     // tree only
    endA.Create(clients);
    const uint32_t nAps = (clients + clientsPerAp - 1) / clientsPerAp;
    if (topology == "dumbbell")
    {
        endB.Create(clients);
        routers.Create(2);
    }
    else
    {
        endB.Create(1);
        routers.Create(1);
        if (topology == "tree")
        {
            aps.Create(nAps);
        }
    }
    InternetStackHelper stack;
    stack.Install(endA);
    stack.Install(endB);
    stack.Install(routers);
    stack.Install(aps);

    const std::string qsize = std::to_string(queue) + "p";
    auto makeLink = [&](uint64_t rate, double delay) {
        PointToPointHelper p2p;
        p2p.SetDeviceAttribute("DataRate", DataRateValue(DataRate(rate)));
        p2p.SetChannelAttribute("Delay", TimeValue(Seconds(delay)));
        p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize(qsize)));
        return p2p;
    };
    PointToPointHelper accessLink = makeLink(access, accessDelay);
    // client k's access link (--accessSpread): the same helper when rates are even
    auto accessOf = [&](uint32_t k) {
        if (accessSpread == 1.0 || clients < 2)
        {
            return accessLink;
        }
        double rate = std::round(access * std::pow(accessSpread, -double(k) / double(clients - 1)));
        return makeLink(uint64_t(rate), accessDelay);
    };
    PointToPointHelper serverLink = makeLink(server, serverDelay);
    PointToPointHelper apLink = makeLink(apRate, apDelay);

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.252");
    NetDeviceContainer allDevices;
    // Connect a and b by a link of its own /30; returns the pair's interfaces.
    auto connect = [&](PointToPointHelper& h, Ptr<Node> a, Ptr<Node> b) {
        NetDeviceContainer d = h.Install(a, b);
        Ipv4InterfaceContainer ifs = addr.Assign(d);
        addr.NewNetwork();
        allDevices.Add(d);
        return ifs;
    };

    std::vector<Ptr<NetDevice>> accessDevices; // star and tree: client k's access link, its two ends (2k, 2k + 1)
    std::vector<Ipv4Address> addrA(clients); // each client's address
    std::vector<Ipv4Address> addrB(clients); // the far end each transfer talks to
    if (topology == "star")
    {
        Ipv4InterfaceContainer s = connect(serverLink, routers.Get(0), endB.Get(0));
        for (uint32_t k = 0; k < clients; k++)
        {
            PointToPointHelper a = accessOf(k);
            addrA[k] = connect(a, endA.Get(k), routers.Get(0)).GetAddress(0);
            accessDevices.push_back(allDevices.Get(allDevices.GetN() - 2)); // the client's end
            accessDevices.push_back(allDevices.Get(allDevices.GetN() - 1)); // the router's end
            addrB[k] = s.GetAddress(1);
        }
    }
    else if (topology == "tree")
    {
        Ipv4InterfaceContainer s = connect(serverLink, routers.Get(0), endB.Get(0));
        for (uint32_t j = 0; j < nAps; j++)
        {
            connect(apLink, aps.Get(j), routers.Get(0));
        }
        for (uint32_t k = 0; k < clients; k++)
        {
            PointToPointHelper a = accessOf(k);
            addrA[k] = connect(a, endA.Get(k), aps.Get(k / clientsPerAp)).GetAddress(0);
            accessDevices.push_back(allDevices.Get(allDevices.GetN() - 2)); // the client's end
            accessDevices.push_back(allDevices.Get(allDevices.GetN() - 1)); // the access point's end
            addrB[k] = s.GetAddress(1);
        }
    }
    else
    {
        connect(serverLink, routers.Get(0), routers.Get(1));
        for (uint32_t k = 0; k < clients; k++)
        {
            addrA[k] = connect(accessLink, endA.Get(k), routers.Get(0)).GetAddress(0);
            addrB[k] = connect(accessLink, routers.Get(1), endB.Get(k)).GetAddress(1);
        }
    }
    // fifo: drop the default FqCoDel root queue discs that Assign installed, so only the
    // device DropTail queue is left (see the comment at the top); fqcodel keeps them.
    const bool fifo = qdisc == "fifo";
    if (fifo)
    {
        TrafficControlHelper().Uninstall(allDevices);
    }

    Progress progress;
    progress.target = bytes * messages;
    progress.message = messages > 1 ? bytes : 0;
    progress.arrivals.assign(clients, {});
    progress.received.assign(clients, 0);
    progress.completion.assign(clients, -1.0);
    std::vector<double> starts(clients, 0.0);  // when each transfer's sender starts (--startSpread)
    Ptr<UniformRandomVariable> spread = CreateObject<UniformRandomVariable>();
    spread->SetStream(1);
    progress.first.assign(clients, -1.0);
    for (uint32_t i = 0; i < allDevices.GetN(); i++)
    {
        Ptr<PointToPointNetDevice> dev = DynamicCast<PointToPointNetDevice>(allDevices.Get(i));
        dev->GetQueue()->TraceConnectWithoutContext("Drop", MakeBoundCallback(&QueueDrop, &progress));
        Ptr<TrafficControlLayer> tc = dev->GetNode()->GetObject<TrafficControlLayer>();
        Ptr<QueueDisc> disc = tc ? tc->GetRootQueueDiscOnDevice(dev) : nullptr;
        if (fifo && disc)
        {
            std::fprintf(stderr, "transfers: a queue disc is still installed\n");
            return 1;
        }
        if (!fifo && !DynamicCast<FqCoDelQueueDisc>(disc))
        {
            std::fprintf(stderr, "transfers: no FqCoDel queue disc on a device\n");
            return 1;
        }
        if (disc) // FqCoDel's own drops: its limit overflowing, and CoDel's
        {
            disc->TraceConnectWithoutContext("Drop", MakeBoundCallback(&QueueDiscDrop, &progress));
        }
    }
    // With no queue disc, a packet meets a full device queue in the traffic
    // control layer: the device stops its queue when full (flow control) and
    // the layer drops the packet there, so the device queue's own Drop trace
    // stays silent. Count both.
    for (NodeList::Iterator n = NodeList::Begin(); n != NodeList::End(); ++n)
    {
        Ptr<TrafficControlLayer> tc = (*n)->GetObject<TrafficControlLayer>();
        if (!tc || !tc->TraceConnectWithoutContext("TcDrop", MakeBoundCallback(&QueueDrop, &progress)))
        {
            std::fprintf(stderr, "transfers: cannot trace the traffic control layer's drops\n");
            return 1;
        }
    }

    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // Random packet loss: a RateErrorModel (per packet) on the device that receives the data on
    // each client's access link (up: the router's or AP's end; down: the client's end). ACKs,
    // going the other way, are not lost. Each model draws from its own stream.
    if (loss > 0)
    {
        const bool upData = direction == "up";
        for (uint32_t k = 0; k < clients; k++)
        {
            Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
            em->SetAttribute("ErrorUnit", EnumValue(RateErrorModel::ERROR_UNIT_PACKET));
            em->SetAttribute("ErrorRate", DoubleValue(loss));
            em->AssignStreams(100 + k);
            accessDevices[2 * k + (upData ? 1 : 0)]->SetAttribute("ReceiveErrorModel", PointerValue(em));
        }
    }

    // A sink on `rcv`'s `port` counted in `into` as transfer k, and a bulk sender of `total` bytes to it.
    auto sink = [&](Ptr<Node> rcv, uint16_t port, Progress* into, uint32_t k) {
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sinkApp = sinkHelper.Install(rcv);
        sinkApp.Start(Seconds(0));
        sinkApp.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&SinkRx, into, k));
    };
    auto sender = [&](Ptr<Node> snd, Ipv4Address to, uint16_t port, uint64_t total) {
        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(to, port));
        bulk.SetAttribute("MaxBytes", UintegerValue(total));
        // Writes of one full segment: with Nagle off, the default 512-byte
        // writes would go out as 512-byte segments while cwnd allows.
        bulk.SetAttribute("SendSize", UintegerValue(segment));
        return bulk.Install(snd);
    };
    // --direction round: the downloads are counted here; each one's completion starts its client's
    // upload (an application installed at that instant starts at once), which `progress` counts.
    Progress downloads;
    if (round)
    {
        downloads.target = bytes;
        downloads.arrivals.assign(clients, {});
        downloads.received.assign(clients, 0);
        downloads.completion.assign(clients, -1.0);
        downloads.first.assign(clients, -1.0);
        downloads.stopWhenDone = false;
        downloads.then = [&](uint32_t k) {
            sender(endA.Get(k), addrB[k], 6000 + k, bytes).Start(Seconds(0));
        };
        for (uint32_t k = 0; k < clients; k++)
        {
            sink(endB.Get(0), 6000 + k, &progress, k);
        }
    }

    const bool up = direction == "up";
    for (uint32_t k = 0; k < clients; k++)
    {
        const uint16_t port = 5000 + k;
        // Sender and receiver of transfer k.
        Ptr<Node> snd;
        Ptr<Node> rcv;
        Ipv4Address rcvAddr;
        Ptr<Node> bNode = topology == "dumbbell" ? endB.Get(k) : endB.Get(0);
        if (up)
        {
            snd = endA.Get(k);
            rcv = bNode;
            rcvAddr = addrB[k];
        }
        else
        {
            snd = bNode;
            rcv = endA.Get(k);
            rcvAddr = addrA[k];
        }
        sink(rcv, port, round ? &downloads : &progress, k);
        ApplicationContainer sendApp = sender(snd, rcvAddr, port, bytes * messages);
        starts[k] = startSpread > 0 ? spread->GetValue(0.0, startSpread) : 0.0;
        sendApp.Start(Seconds(starts[k]));
    }

    Simulator::Stop(Seconds(horizon));
    auto simStart = std::chrono::steady_clock::now();
    Simulator::Run();
    auto simEnd = std::chrono::steady_clock::now();
    const double simEndTime = Simulator::Now().GetSeconds();
    Simulator::Destroy();

    std::ostringstream o;
    o << "{";
    o << "\"params\": {"
      << "\"topology\": " << JsonStr(topology) << ", \"clients\": " << clients
      << ", \"bytes\": " << bytes << ", \"direction\": " << JsonStr(direction)
      << ", \"access\": " << access << ", \"accessDelay\": " << JsonNum(accessDelay)
      << ", \"server\": " << server << ", \"serverDelay\": " << JsonNum(serverDelay)
      << ", \"apRate\": " << apRate << ", \"apDelay\": " << JsonNum(apDelay)
      << ", \"clientsPerAp\": " << clientsPerAp << ", \"queue\": " << queue
      << ", \"window\": " << window << ", \"seed\": " << seed << ", \"startSpread\": " << JsonNum(startSpread)
      << ", \"horizon\": " << JsonNum(horizon) << ", \"qdisc\": " << JsonStr(qdisc) << ", \"loss\": " << JsonNum(loss) << ", \"messages\": " << messages << ", \"accessSpread\": " << JsonNum(accessSpread) << ", \"tcp\": " << JsonStr(tcp) << ", \"sack\": " << (sack ? "true" : "false") << "}, ";
    o << "\"tcp\": {"
      << "\"congestion_control\": " << JsonStr(AttrDefault("ns3::TcpL4Protocol", "SocketType"))
      << ", \"recovery\": " << JsonStr(AttrDefault("ns3::TcpL4Protocol", "RecoveryType"))
      << ", \"segment_size\": " << AttrDefault("ns3::TcpSocket", "SegmentSize")
      << ", \"initial_cwnd\": " << AttrDefault("ns3::TcpSocket", "InitialCwnd")
      << ", \"del_ack_count\": " << AttrDefault("ns3::TcpSocket", "DelAckCount")
      << ", \"del_ack_timeout_s\": " << JsonNum(TimeDefault("ns3::TcpSocket", "DelAckTimeout"))
      << ", \"snd_buf\": " << AttrDefault("ns3::TcpSocket", "SndBufSize")
      << ", \"rcv_buf\": " << AttrDefault("ns3::TcpSocket", "RcvBufSize")
      << ", \"no_delay\": " << AttrDefault("ns3::TcpSocket", "TcpNoDelay")
      << ", \"sack\": " << AttrDefault("ns3::TcpSocketBase", "Sack")
      << ", \"timestamps\": " << AttrDefault("ns3::TcpSocketBase", "Timestamp")
      << ", \"window_scaling\": " << AttrDefault("ns3::TcpSocketBase", "WindowScaling")
      << ", \"min_rto_s\": " << JsonNum(TimeDefault("ns3::TcpSocketBase", "MinRto"))
      << ", \"conn_timeout_s\": " << JsonNum(TimeDefault("ns3::TcpSocket", "ConnTimeout"))
      << ", \"conn_count\": " << AttrDefault("ns3::TcpSocket", "ConnCount")
      << ", \"data_retries\": " << AttrDefault("ns3::TcpSocket", "DataRetries")
      << ", \"send_size\": " << segment
      << ", \"queue_disc\": " << (fifo ? std::string("null") : JsonStr("ns3::FqCoDelQueueDisc " + AttrDefault("ns3::FqCoDelQueueDisc", "MaxSize")))
      << ", \"device_queue\": " << JsonStr("ns3::DropTailQueue<Packet> " + qsize) << "}, ";
    o << "\"completion\": [";
    double last = -1;
    bool allDone = true;
    for (uint32_t k = 0; k < clients; k++)
    {
        double t = progress.completion[k];
        o << (k ? ", " : "") << (t < 0 ? std::string("null") : JsonNum(t));
        if (t < 0)
        {
            allDone = false;
        }
        last = std::max(last, t);
    }
    o << "], \"starts\": [";
    for (uint32_t k = 0; k < clients; k++)
    {
        o << (k ? ", " : "") << JsonNum(starts[k]);
    }
    o << "], \"arrivals\": [";
    for (uint32_t k = 0; k < clients; k++)
    {
        o << (k ? ", [" : "[");
        for (size_t i = 0; i < progress.arrivals[k].size(); i++)
        {
            o << (i ? ", " : "") << JsonNum(progress.arrivals[k][i]);
        }
        o << "]";
    }
    // first_rx: when each transfer's first byte arrived. A round's is the longer of its download's
    // and its upload's waits for a first byte, each from its own start (null: one never came).
    o << "], \"first_rx\": [";
    for (uint32_t k = 0; k < clients; k++)
    {
        double t = progress.first[k];
        if (round)
        {
            const bool both = downloads.first[k] >= 0 && t >= 0;
            t = both ? std::max(downloads.first[k] - starts[k], t - downloads.completion[k]) : -1.0;
        }
        o << (k ? ", " : "") << (t < 0 ? std::string("null") : JsonNum(t));
    }
    o << "], ";
    if (round)
    {
        o << "\"downloads\": [";
        for (uint32_t k = 0; k < clients; k++)
        {
            double t = downloads.completion[k];
            o << (k ? ", " : "") << (t < 0 ? std::string("null") : JsonNum(t));
        }
        o << "], ";
    }
    o << "\"last\": " << (allDone ? JsonNum(last) : std::string("null"))
      << ", \"complete\": " << progress.done << ", \"sim_end\": " << JsonNum(simEndTime)
      << ", \"queue_drops\": " << progress.drops;
    auto wallEnd = std::chrono::steady_clock::now();
    o << ", \"wall_sim_s\": " << JsonNum(std::chrono::duration<double>(simEnd - simStart).count())
      << ", \"wall_s\": " << JsonNum(std::chrono::duration<double>(wallEnd - wallStart).count())
      << "}";
    std::printf("%s\n", o.str().c_str());
    return 0; // incomplete transfers are a result (null), not an error
}
