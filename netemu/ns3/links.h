// links.h -- changes during the run: link rates, delays, losses, outages, crashes
// Part of engine.cc (netemu.ns3), included by it once after the ns-3 and standard headers; not a header of
// its own: one translation unit keeps the first build at one compile of ns-3's headers.
#pragma once

namespace
{

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

} // namespace
