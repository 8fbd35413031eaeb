// udp.h -- the datagram transport: messages as UDP packets
// Part of engine.cc (netemu.ns3), included by it once after the ns-3 and standard headers; not a header of
// its own: one translation unit keeps the first build at one compile of ns-3's headers.
#pragma once

namespace
{

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

} // namespace
