package nexmark

import (
	"math"
	"math/bits"
	"strconv"
	"sync"

	"github.com/tributary/tributary/sql/types"
)

// field is one generated column.
type field uint8

const (
	fRowIndex field = iota
	pID
	pName
	pEmail
	pCard
	pCity
	pState
	pDateTime
	pExtra
	aID
	aItem
	aDesc
	aInitialBid
	aReserve
	aDateTime
	aExpires
	aSeller
	aCategory
	aExtra
	bAuction
	bBidder
	bPrice
	bChannel
	bURL
	bDateTime
	bExtra
)

type schemaField struct {
	name, kind string
	f          field
}

// schemas are the reference schemas (RisingWave names and types).
var schemas = [...][]schemaField{
	Person: {{"id", "bigint", pID}, {"name", "varchar", pName}, {"email_address", "varchar", pEmail},
		{"credit_card", "varchar", pCard}, {"city", "varchar", pCity}, {"state", "varchar", pState},
		{"date_time", "timestamp", pDateTime}, {"extra", "varchar", pExtra}},
	Auction: {{"id", "bigint", aID}, {"item_name", "varchar", aItem}, {"description", "varchar", aDesc},
		{"initial_bid", "bigint", aInitialBid}, {"reserve", "bigint", aReserve}, {"date_time", "timestamp", aDateTime},
		{"expires", "timestamp", aExpires}, {"seller", "bigint", aSeller}, {"category", "bigint", aCategory},
		{"extra", "varchar", aExtra}},
	Bid: {{"auction", "bigint", bAuction}, {"bidder", "bigint", bBidder}, {"price", "bigint", bPrice},
		{"channel", "varchar", bChannel}, {"url", "varchar", bURL}, {"date_time", "timestamp", bDateTime},
		{"extra", "varchar", bExtra}},
}

// Generator constants (Beam / nexmark-rs defaults).
const (
	firstPersonID      = 1000
	firstAuctionID     = 1000
	firstCategoryID    = 10
	numCategories      = 5
	personIDLead       = 10
	auctionIDLead      = 10
	numActivePeople    = 1000
	numInFlightAuction = 100
	hotAuctionRatio    = 2
	hotBiddersRatio    = 4
	hotSellersRatio    = 4
	hotChannelsRatio   = 2
	hotBatch           = 100 // HOT_AUCTION_RATIO etc.: the width of a hot batch
	numChannels        = 10000
	avgPersonBytes     = 200
	avgAuctionBytes    = 500
	avgBidBytes        = 100
	// The fixed part of each event's size (its ids, numbers and timestamps,
	// plus the typical lengths of its other strings), from which extra pads
	// the event to its average size.
	personBaseBytes  = 8 + 12 + 17 + 19 + 8 + 2 + 8
	auctionBaseBytes = 8 + 20 + 100 + 6*8
	bidBaseBytes     = 32
)

// Random lanes: field values draw from hash(event, lane), so each depends
// only on the event number and the fields are independent of each other.
const (
	lName uint64 = iota + 1
	lEmail
	lEmail2
	lCard
	lCity
	lState
	lExtra
	lExtraLen
	lItem
	lDesc
	lPrice
	lPrice2
	lExpires
	lSellerHot
	lSeller
	lCategory
	lAuctionHot
	lAuction
	lBidderHot
	lBidder
	lChannelHot
	lChannel
)

// hash is splitmix64 over (event, lane): the random bits of one value.
func hash(e int64, lane uint64) uint64 {
	z := uint64(e)*0xBF58476D1CE4E5B9 ^ lane*0x94D049BB133111EB
	z += 0x9E3779B97F4A7C15
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// uniform returns a number in [0, n) for n > 0.
func uniform(e int64, lane uint64, n int64) int64 {
	hi, _ := bits.Mul64(hash(e, lane), uint64(n))
	return int64(hi)
}

func unit(e int64, lane uint64) float64 {
	return float64(hash(e, lane)>>11) / (1 << 53)
}

// lastPerson is the base-0 id of the last person created at or before event e.
func lastPerson(e int64) int64 {
	epoch, off := e/eventsPerEpoch, e%eventsPerEpoch
	return epoch*personsPer + min(off, personsPer-1)
}

// lastAuction is the base-0 id of the last auction created at or before e.
func lastAuction(e int64) int64 {
	epoch, off := e/eventsPerEpoch, e%eventsPerEpoch
	switch {
	case off < personsPer:
		epoch--
		off = auctionsPer - 1
	case off >= personsPer+auctionsPer:
		off = auctionsPer - 1
	default:
		off -= personsPer
	}
	return epoch*auctionsPer + off
}

// nextPerson is a random active person (base 0), possibly up to
// personIDLead ahead of the last one.
func nextPerson(e int64, lane uint64) int64 {
	n := lastPerson(e) + 1
	active := min(n, numActivePeople)
	return n - active + uniform(e, lane, active+personIDLead)
}

// nextAuction is a random in-flight auction (base 0), possibly up to
// auctionIDLead ahead of the last one.
func nextAuction(e int64, lane uint64) int64 {
	last := lastAuction(e)
	lo := max(last-numInFlightAuction, 0)
	return lo + uniform(e, lane, last-lo+1+auctionIDLead)
}

// price is log-uniform from 100 to 1e8.
func price(e int64, lane uint64) int64 {
	return int64(math.Round(math.Pow(10, unit(e, lane)*6) * 100))
}

// timestamp is event e's event time in ms.
func (c *Config) timestamp(e int64) int64 {
	if c.TimeStepNs > 0 {
		return BaseTime + int64(float64(e)*c.TimeStepNs/1e6)
	}
	return BaseTime + e*c.GapNs/1e6
}

// extraLen is the length of the padding that brings an event of base size
// cur to about avg bytes.
func extraLen(e int64, avg, cur int64) int64 {
	d := avg - cur
	delta := int64(math.Round(float64(d) * 0.2))
	if delta <= 0 {
		return max(d, 0)
	}
	return d - delta + uniform(e, lExtraLen, 2*delta)
}

// Person.
func personID(e int64) int64 { return lastPerson(e) + firstPersonID }

// Auction.
func auctionID(e int64) int64 { return lastAuction(e) + firstAuctionID }

func seller(e int64) int64 {
	if uniform(e, lSellerHot, hotSellersRatio) > 0 {
		return lastPerson(e)/hotBatch*hotBatch + firstPersonID
	}
	return nextPerson(e, lSeller) + firstPersonID
}

func (c *Config) expires(e int64) int64 {
	t := c.timestamp(e)
	h := c.timestamp(e+numInFlightAuction*eventsPerEpoch/auctionsPer) - t
	return t + 1 + uniform(e, lExpires, max(2*h, 1))
}

// Bid.
func bidAuction(e int64) int64 {
	if uniform(e, lAuctionHot, hotAuctionRatio) > 0 {
		return lastAuction(e)/hotBatch*hotBatch + firstAuctionID
	}
	return nextAuction(e, lAuction) + firstAuctionID
}

func bidder(e int64) int64 {
	if uniform(e, lBidderHot, hotBiddersRatio) > 0 {
		return lastPerson(e)/hotBatch*hotBatch + 1 + firstPersonID
	}
	return nextPerson(e, lBidder) + firstPersonID
}

// channel is the index of the bid's channel in tables().channels: one of
// the 4 hot channels with probability 1/2, else one of 10,000.
func channel(e int64) int {
	if uniform(e, lChannelHot, hotChannelsRatio) > 0 {
		return int(uniform(e, lChannel, int64(len(hotChannels))))
	}
	return len(hotChannels) + int(uniform(e, lChannel, numChannels))
}

var (
	firstNames  = []string{"peter", "paul", "luke", "john", "saul", "vicky", "kate", "julie", "sarah", "deiter", "walter"}
	lastNames   = []string{"shultz", "abrams", "spencer", "white", "bartels", "walton", "smith", "jones", "noris"}
	cities      = []string{"phoenix", "los angeles", "san francisco", "boise", "portland", "bend", "redmond", "seattle", "kent", "cheyenne"}
	states      = []string{"az", "ca", "id", "or", "wa", "wy"}
	hotChannels = []string{"Google", "Facebook", "Baidu", "Apple"}
)

// randomLen is the length of the fixed random letter buffer that random
// strings are slices of.
const randomLen = 1 << 20

// lookup holds the precomputed strings: names, channels with their URLs
// and a buffer of random lowercase letters.
type lookup struct {
	names          []string
	channels, urls []string
	letters        string
}

var (
	tablesOnce sync.Once
	tablesVal  *lookup
)

func tables() *lookup {
	tablesOnce.Do(func() {
		l := &lookup{}
		for _, f := range firstNames {
			for _, s := range lastNames {
				l.names = append(l.names, f+" "+s)
			}
		}
		buf := make([]byte, randomLen)
		for i := range buf {
			buf[i] = 'a' + byte(uniform(int64(i), 0x5eed, 26))
		}
		l.letters = string(buf)
		rs := func(seed int64, lane uint64, n int64) string {
			off := uniform(seed, lane, randomLen-n)
			return l.letters[off : off+n]
		}
		// A URL is https://www.nexmark.com/<rs5>/<rs5>/<rs5>/item.htm?query=1;
		// a channel's is fixed, seeded by its number (negative for the hot ones).
		baseURL := func(seed int64) string {
			return "https://www.nexmark.com/" + rs(seed, 1, 5) + "/" + rs(seed, 2, 5) + "/" + rs(seed, 3, 5) + "/item.htm?query=1"
		}
		for i, h := range hotChannels {
			l.channels = append(l.channels, h)
			l.urls = append(l.urls, baseURL(-1-int64(i)))
		}
		for i := 0; i < numChannels; i++ {
			u := baseURL(int64(i))
			if uniform(int64(i), 4, 10) > 0 {
				// Java's Math.abs(Integer.reverse(i)).
				r := int32(bits.Reverse32(uint32(i)))
				if r < 0 {
					r = -r
				}
				u += "&channel_id=" + strconv.Itoa(int(r))
			}
			l.channels = append(l.channels, "channel-"+strconv.Itoa(i))
			l.urls = append(l.urls, u)
		}
		tablesVal = l
	})
	return tablesVal
}

// randomString is n random letters: a slice of the letter buffer.
func (l *lookup) randomString(e int64, lane uint64, n int64) string {
	off := uniform(e, lane, randomLen-n)
	return l.letters[off : off+n]
}

// Fill appends up to limit rows of split, starting at its offset off (the
// number of its rows already produced), as Insert rows to dst, whose columns
// are the table's. It returns how many rows it appended: fewer than limit
// only when the split is exhausted. Strings are slices of precomputed ones,
// except email addresses and credit card numbers: one string per such
// column per call.
func (c *Config) Fill(dst *types.Chunk, split int, off int64, limit int) int {
	n := limit
	if rows := c.SplitRows(split); rows >= 0 {
		n = int(min(int64(limit), max(rows-off, 0)))
	}
	if n <= 0 {
		return 0
	}
	l := tables()
	k := int64(c.Splits)
	first := int64(split) + off*k
	ev := func(i int) int64 { return c.Table.EventOf(first + int64(i)*k) }
	for ci, f := range c.fields {
		v := &dst.Cols[ci]
		for i := 0; i < n; i++ {
			v.Nulls = append(v.Nulls, false)
		}
		switch f {
		case fRowIndex:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, ev(i)+1)
			}
		case pID:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, personID(ev(i)))
			}
		case pName:
			for i := 0; i < n; i++ {
				v.Str = append(v.Str, l.names[uniform(ev(i), lName, int64(len(l.names)))])
			}
		case pEmail:
			// rs(7)@rs(5).com
			const w = 7 + 1 + 5 + 4
			buf := make([]byte, 0, n*w)
			for i := 0; i < n; i++ {
				e := ev(i)
				buf = append(buf, l.randomString(e, lEmail, 7)...)
				buf = append(buf, '@')
				buf = append(buf, l.randomString(e, lEmail2, 5)...)
				buf = append(buf, ".com"...)
			}
			appendSlices(v, string(buf), n, w)
		case pCard:
			// Four %04d groups joined by spaces.
			const w = 4*4 + 3
			buf := make([]byte, 0, n*w)
			for i := 0; i < n; i++ {
				h := hash(ev(i), lCard)
				for g := 0; g < 4; g++ {
					if g > 0 {
						buf = append(buf, ' ')
					}
					x := ((h >> (16 * g)) & 0xffff) % 10000
					buf = append(buf, byte('0'+x/1000), byte('0'+x/100%10), byte('0'+x/10%10), byte('0'+x%10))
				}
			}
			appendSlices(v, string(buf), n, w)
		case pCity:
			for i := 0; i < n; i++ {
				v.Str = append(v.Str, cities[uniform(ev(i), lCity, int64(len(cities)))])
			}
		case pState:
			for i := 0; i < n; i++ {
				v.Str = append(v.Str, states[uniform(ev(i), lState, int64(len(states)))])
			}
		case pDateTime, aDateTime, bDateTime:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, c.timestamp(ev(i))*1000)
			}
		case pExtra, aExtra, bExtra:
			avg, cur := int64(avgPersonBytes), int64(personBaseBytes)
			if f == aExtra {
				avg, cur = avgAuctionBytes, auctionBaseBytes
			} else if f == bExtra {
				avg, cur = avgBidBytes, bidBaseBytes
			}
			for i := 0; i < n; i++ {
				e := ev(i)
				v.Str = append(v.Str, l.randomString(e, lExtra, extraLen(e, avg, cur)))
			}
		case aID:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, auctionID(ev(i)))
			}
		case aItem:
			for i := 0; i < n; i++ {
				v.Str = append(v.Str, l.randomString(ev(i), lItem, 20))
			}
		case aDesc:
			for i := 0; i < n; i++ {
				v.Str = append(v.Str, l.randomString(ev(i), lDesc, 100))
			}
		case aInitialBid:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, price(ev(i), lPrice))
			}
		case aReserve:
			for i := 0; i < n; i++ {
				e := ev(i)
				v.I64 = append(v.I64, price(e, lPrice)+price(e, lPrice2))
			}
		case aExpires:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, c.expires(ev(i))*1000)
			}
		case aSeller:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, seller(ev(i)))
			}
		case aCategory:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, firstCategoryID+uniform(ev(i), lCategory, numCategories))
			}
		case bAuction:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, bidAuction(ev(i)))
			}
		case bBidder:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, bidder(ev(i)))
			}
		case bPrice:
			for i := 0; i < n; i++ {
				v.I64 = append(v.I64, price(ev(i), lPrice))
			}
		case bChannel:
			for i := 0; i < n; i++ {
				v.Str = append(v.Str, l.channels[channel(ev(i))])
			}
		case bURL:
			for i := 0; i < n; i++ {
				v.Str = append(v.Str, l.urls[channel(ev(i))])
			}
		}
	}
	dst.SetLen(dst.Len() + n)
	return n
}

// appendSlices appends the n width-w slices of s to v.
func appendSlices(v *types.Vector, s string, n, w int) {
	for i := 0; i < n; i++ {
		v.Str = append(v.Str, s[i*w:(i+1)*w])
	}
}
