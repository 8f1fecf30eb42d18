"""The stop-word lists of pylance 14 (what ``remove_stop_words`` drops, per ``language``).

Each list is exactly the set of tokens pylance 14.0.2 removes for that language: found by
indexing candidate strings with pylance (raw tokenizer, no lower-casing, stemming or folding)
and keeping those its index left out (``tests/test_fts_stop_words.py`` checks the lists
against pylance both ways). pylance's lists come from public stop-word collections, the
Snowball project's (BSD-licensed) among them. Tokens are compared after lower-casing and
stemming, as pylance does, so a stemmed form that differs from its list entry is kept.
"""

from typing import Any, Dict, FrozenSet

from lancepy.exceptions import InvalidArgumentError

_LISTS = {
    "Arabic": """
    ءَ آض آمينَ آناء آنفا آه آها آهاً آهٍ آهِ آي أبدا أبو أبٌ أجل أجمع أخبر أخذ أخو أخٌ أرى أصبح
    أصلا أضحى أف أفٍّ أقبل أقل أكثر أل ألا أم أما أمام أمامك أمامكَ أمد أمس أمسى أمّا أن أنا أنت
    أنتم أنتما أنتن أنتِ أنشأ أنى أنًّ أنّى أهلا أو أوشك أولئك أولاء أولالك أوه أوّهْ أى أي أيا
    أيضا أين أينما أيها أيّ أيّان أُفٍّ إذ إذا إذاً إذما إذن إزاء إلا إلى إليك إليكم إليكما
    إليكن إليكنّ إليكَ إلَيْكَ إلّا إما إمّا إن إنا إنما إنه إنَّ إى إي إياك إياكم إياكما إياكن
    إيانا إياه إياها إياهم إياهما إياهن إياي إيه إيهٍ ابتدأ اخلولق ارتدّ استحال الآن الألاء
    الألى التي الذي الذين اللائي اللاتي اللتان اللتيا اللتين اللذان اللذين اللواتي انبرى انقلب
    بؤسا بئس بات بخ بخٍ بس بسّ بضع بطآن بعد بعدا بعض بغتة بك بكم بكما بكن بل بلى بما بماذا بمن
    بنا به بها بهم بهما بهن بي بيد بين بَسْ بَلْهَ تارة تانِ تانِك تبدّل تجاه تحت تحوّل تخذ تعسا
    تفعلان تفعلون تفعلين تلقاء تلك تلكم تلكما ته تي تين تينك تَيْنِ تِه تِي ثم ثمة ثمنمئة ثمَّ
    ثمّ ثمّة جعل جلل جميع جير حار حاشا حاي حبذا حبيب حتى حجا حدَث حرى حسب حقا حمدا حمو حمٌ حيث
    حيثما حين حيَّ حَذارِ خاصة خال خبَّر خلا خلافا خلف دواليك دون دونك ذا ذات ذاك ذان ذانك ذانِ
    ذلك ذلكم ذلكما ذلكن ذه ذو ذوا ذواتا ذواتي ذي ذيت ذين ذينك ذَيْنِ ذِه ذِي راح رجع رويدك ريث
    رُبَّ زود ساء سبحان سحقا سرا سرعان سمعا سوف سوى شبه شتان شتانَ شرع شمال شَتَّانَ صار صباح
    صبرا صدقا صراحة صهٍ صهْ ضحوة طاق طالما طرا طفق طَق ظلّ عاد عامة عجبا عدا عسى عل علق على عليك
    عليه علًّ عما عن عند عوض عيانا عَدَسْ غالبا غدا غداة فإذا فإن فرادى فضلا فلان فمن فو فوق في
    فيم فيما فيه فيها قاطبة قام قبل قد قطّ قلما كأن كأنما كأنّ كأي كأين كأيّ كأيّن كاد كان كثيرا
    كذا كذلك كرب كل كلا كلاهما كلتا كلما كليكما كليهما كلَّا كلّما كم كما كن كى كي كيت كيف كيفما
    كِخ لئن لاسيما لبيك لدن لدى لعل لعلَّ لعمر لك لكم لكما لكن لكنما لكنَّ لكي لما لمّا لنا له
    لها لهم لهما لهن لو لولا لوما لي ليت مادام ماذا مازال مافتئ متى مثل مذ مرّة مساء مع معاذ
    مكانكم مكانكما مكانكنّ مكانَك مما ممن من منذ منه منها مه مهما نا نبَّا نحن نحو نيف نَخْ نَّ
    هؤلاء ها هاتان هاته هاتي هاتين هاك هاكَ هاهنا هبّ هذا هذان هذه هذي هذين هكذا هل هلا هلم هلّا
    هم هما هن هنا هناك هنالك هو هي هيا هيت هيهات هيّا هَؤلاء هَاتانِ هَاتَيْنِ هَاتِه هَاتِي
    هَجْ هَذا هَذانِ هَذَيْنِ هَذِه هَذِي هَيْهات وإذ وإذا وإن وا والذي والذين واهاً وراءَك ولكن
    ولو ومن وهو وَيْ وُشْكَانَ يا يفعلان يفعلون يمين ّأيّان
    """,
    "Danish": """
    ad af alle alt anden at blev blive bliver da de dem den denne der deres det dette dig din
    disse dog du efter eller en end er et for fra ham han hans har havde have hende hendes her
    hos hun hvad hvis hvor i ind jeg jer jo kunne man mange med meget men mig min mine mit mod
    ned noget nogle nu når og også om op os over på selv sig sin sine sit skal skulle som sådan
    thi til ud under var vi vil ville vor være været
    """,
    "Dutch": """
    aan al alles als altijd andere ben bij daar dan dat de der deze die dit doch doen door dus
    een eens en er ge geweest gij haar had heb hebben heeft hem het hier hij hoe hun iemand iets
    ik in is ja je jij jou jouw jullie kan kon kunnen maar me meer men met mij mijn moet na naar
    nog nu of om omdat onder ons ook op over reeds te tegen toch toen tot u uit uw van veel voor
    want waren was wat we werd wezen wie wij wil worden wordt zal ze zelf zich zij zijn zo zou
    """,
    "English": """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can did do does doing down during each few for from further had
    has have having he he'd he'll he's her here hers herself him himself his how i i'd i'll i'm
    i've if in into is it it'd it'll it's its itself just me more most my myself now of off on
    once only or other our ours ourselves out over own re same she she'd she'll she's should
    should've so some such than that that'll the their theirs them themselves then there these
    they they'd they'll they're they've this those through to too under until up very was we
    we'd we'll we're we've were what when where which while who whom why will with you you'd
    you'll you're you've your yours yourself yourselves
    """,
    "Finnish": """
    että he heidän heidät heihin heille heillä heiltä heissä heistä heitä hän häneen hänelle
    hänellä häneltä hänen hänessä hänestä hänet häntä itse ja johon joiden joihin joiksi joilla
    joille joilta joina joissa joista joita joka joksi jolla jolle jolta jona jonka jos jossa
    josta jota jotka kanssa keiden keihin keiksi keille keillä keiltä keinä keissä keistä keitä
    keneen keneksi kenelle kenellä keneltä kenen kenenä kenessä kenestä kenet ketkä ketä koska
    kuin kuka kun me meidän meidät meihin meille meillä meiltä meissä meistä meitä mihin miksi
    mikä mille millä miltä minkä minua minulla minulle minulta minun minussa minusta minut
    minuun minä missä mistä mitkä mitä mukaan mutta ne niiden niihin niiksi niille niillä niiltä
    niin niinä niissä niistä niitä noiden noihin noiksi noilla noille noilta noin noina noissa
    noista noita nuo nyt näiden näihin näiksi näille näillä näiltä näinä näissä näistä näitä
    nämä ole olemme olen olet olette oli olimme olin olisi olisimme olisin olisit olisitte
    olisivat olit olitte olivat olla olleet ollut on ovat se sekä sen siihen siinä siitä siksi
    sille sillä siltä sinua sinulla sinulle sinulta sinun sinussa sinusta sinut sinuun sinä sitä
    tai te teidän teidät teihin teille teillä teiltä teissä teistä teitä tuo tuohon tuoksi
    tuolla tuolle tuolta tuon tuona tuossa tuosta tuota tähän täksi tälle tällä tältä tämä tämän
    tänä tässä tästä tätä vaan vai vaikka yli
    """,
    "French": """
    ai aie aient aies ait au aurai auraient aurais aurait aurez auriez aurions aurons auront aux
    avaient avais avait avec avez aviez avons ayant ayez ayons c ce ceci cela celà ces cet cette
    d dans de des du elle elles en es et eu eue eues eurent eus eusse eussent eusses eussiez
    eussions eut eux eûmes eût eûtes furent fus fusse fussent fusses fussiez fussions fut fûmes
    fûtes ici il ils j je l la le les leur leurs lui m ma mais me mes moi mon même nos notre
    nous on ont ou par pour qu que quel quelle quelles quels qui s sa se sera serai seraient
    serais serait seras serez seriez serions serons seront ses soi soient sois soit sont soyez
    soyons suis sur t ta te tes toi ton tu un une vos votre vous y à étaient étais était étant
    étiez étions êtes
    """,
    "German": """
    aber alle allem allen aller alles als also am an ander andere anderem anderen anderer
    anderes anderm andern anderr anders auch auf aus bei bin bis bist da damit dann das dass
    dasselbe dazu daß dein deine deinem deinen deiner deines dem demselben den denn denselben
    der derer derselbe derselben des desselben dessen dich die dies diese dieselbe dieselben
    diesem diesen dieser dieses dir doch dort du durch ein eine einem einen einer eines einig
    einige einigem einigen einiger einiges einmal er es etwas euch euer eure eurem euren eurer
    eures für gegen gewesen hab habe haben hat hatte hatten hier hin hinter ich ihm ihn ihnen
    ihr ihre ihrem ihren ihrer ihres im in indem ins ist jede jedem jeden jeder jedes jene jenem
    jenen jener jenes jetzt kann können könnte man manche manchem manchen mancher manches mein
    meine meinem meinen meiner meines mich mir mit muss musste nach noch nun nur ob oder sehr
    sein seine seinem seinen seiner seines selbst sich sie sind so solche solchem solchen
    solcher solches soll sollte sondern sonst um und uns unse unsem unsen unser unsere unserem
    unseren unserer unseres unses unter viel vom von vor war waren warst was weg weil weiter
    welche welchem welchen welcher welches wenn werde werden wie wieder will wir wird wirst wo
    wollen wollte während würde würden zu zum zur zwar zwischen über
    """,
    "Greek": """
    αλλα αν αντι απο από αυτα αυτεσ αυτη αυτο αυτοι αυτοσ αυτουσ αυτων αἱ αἳ αἵ αὐτόσ αὐτὸς αὖ
    γάρ γα γε για γοῦν γὰρ δέ δή δαί δαὶ δε διά διὰ δὲ δὴ είμαι είναι εαν ειμαι ειμαστε ειναι
    εισαι ειστε εκεινα εκεινεσ εκεινη εκεινο εκεινοι εκεινοσ εκεινουσ εκεινων ενω επ επι εἰ εἰμί
    εἰμὶ εἰς εἰσ εἴ εἴμι εἴτε η θα ισωσ κ καί καίτοι καθ και κατ κατά κατα κατὰ καὶ κι κἀν κἂν
    μέν μα με μεθ μετ μετά μετα μετὰ μἐν μὲν μὴν να ο οι ομωσ οπωσ οσο οτι οἱ οἳ οἷς οὓς οὕτω
    οὕτως οὕτωσ οὖν οὗ οὗτος οὗτοσ παρ παρά παρα παρὰ περί περὶ ποια ποιεσ ποιο ποιοι ποιοσ
    ποιουσ ποιων ποτε που ποῦ προ προσ πρόσ πρὸ πρὸς πως πωσ σε στη στην στο στον σόσ σύ σύν σὸς
    σὺ σὺν τά τήν τί τίς τίσ τα ταῖς τε την τησ τι τινα τις τισ το τοί τοι τοιοῦτος τοιοῦτοσ τον
    τοτε του τούσ τοὺς τοῖς τοῦ των τό τόν τότε τὰ τὰς τὴν τὸ τὸν τῆς τῆσ τῇ τῶν τῷ ωσ ἀλλά ἀλλὰ
    ἀπ ἀπό ἀπὸ ἀφ ἂν ἃ ἄλλος ἄλλοσ ἄν ἄρα ἅμα ἐάν ἐγώ ἐγὼ ἐκ ἐμόσ ἐμὸς ἐν ἐξ ἐπί ἐπεὶ ἐπὶ ἐστι
    ἐφ ἐὰν ἑαυτοῦ ἔτι ἡ ἢ ἣ ἤ ἥ ἧς ἵνα ὁ ὃ ὃν ὃς ὅ ὅδε ὅθεν ὅπερ ὅς ὅσ ὅστις ὅστισ ὅτε ὅτι ὑμόσ
    ὑπ ὑπέρ ὑπό ὑπὲρ ὑπὸ ὡς ὡσ ὥς ὥστε ὦ ᾧ
    """,
    "Hungarian": """
    a abban ahhoz ahogy ahol aki akik akkor alatt amely amelyek amelyekben amelyeket amelyet
    amelynek ami amikor amit amolyan amíg annak arra arról az azok azon azonban azt aztán azután
    azzal azért be belül benne bár csak de e ebben eddig egy egyes egyik egyre egyéb ehhez ekkor
    el ellen elég elő először előtt emilyen ennek erre ez ezek ezen ezt ezzel ezért fel felé
    hanem hiszen hogy hogyan ill ill. illetve ilyen ilyenkor is ismét ison itt kell kellett
    keresztül ki kívül között közül legalább legyen lehet lehetett lenne lenni lesz lett maga
    magát majd meg mellett mely melyek mert mi mikor milyen minden mindenki mindent mindig mint
    mintha mit mivel miért most már más másik még míg nagyon nekem neki néha néhány olyan ott
    pedig persze rá s saját sok sokat sokkal szemben szerint szinte számára talán tehát tovább
    továbbá több ugyanis után utána vagy vagyis vagyok valaki valami valamint való van vannak
    vele vissza viszont volna volt voltak voltam voltunk által általában át én éppen és így
    össze úgy újra ő ők őket
    """,
    "Italian": """
    a abbia abbiamo abbiano abbiate ad agl agli ai al all alla alle allo anche avemmo avendo
    avesse avessero avessi avessimo aveste avesti avete aveva avevamo avevano avevate avevi
    avevo avrai avranno avrebbe avrebbero avrei avremmo avremo avreste avresti avrete avrà avrò
    avuta avute avuti avuto c che chi ci coi col come con contro cui da dagl dagli dai dal dall
    dalla dalle dallo degl degli dei del dell della delle dello di dov dove e ebbe ebbero ebbi
    ed era erano eravamo eravate eri ero essendo faccia facciamo facciano facciate faccio
    facemmo facendo facesse facessero facessi facessimo faceste facesti faceva facevamo facevano
    facevate facevi facevo fai fanno farai faranno farebbe farebbero farei faremmo faremo
    fareste faresti farete farà farò fece fecero feci fosse fossero fossi fossimo foste fosti fu
    fui fummo furono gli ha hai hanno ho i il in io l la le lei li lo loro lui ma mi mia mie
    miei mio ne negl negli nei nel nell nella nelle nello noi nostra nostre nostri nostro o per
    perché più quale quanta quante quanti quanto quella quelle quelli quello questa queste
    questi questo sarai saranno sarebbe sarebbero sarei saremmo saremo sareste saresti sarete
    sarà sarò se si sia siamo siano siate siete sono sta stai stando stanno starai staranno
    starebbe starebbero starei staremmo staremo stareste staresti starete starà starò stava
    stavamo stavano stavate stavi stavo stemmo stesse stessero stessi stessimo steste stesti
    stette stettero stetti stia stiamo stiano stiate sto su sua sue sugl sugli sui sul sull
    sulla sulle sullo suo suoi ti tra tu tua tue tuo tuoi tutti tutto un una uno vi voi vostra
    vostre vostri vostro è
    """,
    "Norwegian": """
    alle at av bare begge ble blei bli blir blitt både båe da de deg dei deim deira deires dem
    den denne der dere deres det dette di din disse ditt du dykk dykkar då eg ein eit eller
    elles en enn er et etter for fordi fra frå før ha hadde han hans har hennar henne hennes her
    hjå ho hoe honom hos hoss hossen hun hva hvem hver hvilke hvilken hvis hvor hvordan hvorfor
    i inn inni ja jeg kan korleis korso kun kunne kva kvar kvarhelst kven kvi kvifor man mange
    me med medan meg meget mellom men mi min mine mitt mot mykje ned no noe noen noka noko nokon
    nokor nokre nå når og også om opp oss over på samme seg selv si sia sidan siden sin sine
    sitt sjøl skal skulle slik so som somme somt så sånn til um upp ut var vart varte ved vere
    verte vi vil ville vore vors vår være vært å
    """,
    "Portuguese": """
    a ao aos aquela aquelas aquele aqueles aquilo as até com como da das de dela delas dele
    deles depois do dos e ela elas ele eles em entre era eram essa essas esse esses esta estamos
    estas estava estavam este esteja estejam estejamos estes esteve estive estivemos estiver
    estivera estiveram estiverem estivermos estivesse estivessem estivéramos estivéssemos estou
    está estávamos estão eu foi fomos for fora foram forem formos fosse fossem fui fôramos
    fôssemos haja hajam hajamos havemos hei houve houvemos houver houvera houveram houverei
    houverem houveremos houveria houveriam houvermos houverá houverão houveríamos houvesse
    houvessem houvéramos houvéssemos há hão isso isto já lhe lhes mais mas me mesmo meu meus
    minha minhas muito na nas no nos nossa nossas nosso nossos num numa nós o os ou para pela
    pelas pelo pelos por qual quando que quem se seja sejam sejamos serei seremos seria seriam
    será serão seríamos seu seus somos sou sua suas são só também te tem temos tenha tenham
    tenhamos tenho terei teremos teria teriam terá terão teríamos teu teus teve tinha tinham
    tive tivemos tiver tivera tiveram tiverem tivermos tivesse tivessem tivéramos tivéssemos tu
    tua tuas tínhamos um uma você vocês vos à às éramos
    """,
    "Romanian": """
    a abia acea aceasta această aceea aceeasi acei aceia acel acela acelasi acele acelea acest
    acesta aceste acestea acestei acestia acestui aceşti aceştia adica ai aia aibă aici al ala
    ale alea alt alta altceva altcineva alte altfel alti altii altul am anume apoi ar are as asa
    asta astea astfel asupra atare atat atata atatea atatia ati atit atita atitea atitia atunci
    au avea avem aveţi avut aş aţi ba ca cam cand care careia carora caruia cat catre ce cea
    ceea cei ceilalti cel cele celor ceva chiar ci cind cine cineva cit cite citeva citiva cu
    cui cum cumva cât câte câtva câţi cînd cît cîte cîtva cîţi că căci cărei căror cărui către
    da daca dacă dar de deasupra deci decit deja desi despre deşi din dintr dintr- dintre doar
    drept dupa după e ea ei el ele era eram este eu eşti fata fel fi fie fiecare fii fim fiu
    fiţi foarte fost i ia iar ii il imi in inainte inapoi inca incit insa intr intre isi iti la
    le li lor lui lângă lîngă m ma mai mea mei mele mereu meu mi mie mine mult multa multe multi
    multă mulţi mă ne ni niste nişte noastre noastră noi nostri nostru noua noştri numai o or
    ori oricare orice oricine oricum oricând oricât oricînd oricît oriunde pai parca pe pentru
    peste pic pina poate pot prea prin printr- putini puţin puţina puţină până pînă sa sa-mi
    sa-ti sai sale sau se si sint sintem spre sub sunt suntem sunteţi sus să săi său t ta tale
    te ti tine toata toate toată tocmai tot toti totul totusi totuşi toţi tu tuturor tăi tău u
    ul ului un una unde undeva unei uneia unele uneori unii unor unora unui unuia unul v va vi
    voastre voastră voi vom vor vostru vouă voştri vreo vreun vă îi îl îmi în îţi își îți ăla
    ălea ăsta ăstea ăştia şi ţi ţie și ți
    """,
    "Russian": """
    а без более больше будет будто бы был была были было быть в вам вас вдруг ведь во вот
    впрочем все всегда всего всех всю вы где да даже для до другой его ее ей ему если есть еще
    её ж же за зачем здесь и из или им иногда их к кажется как какая какой когда конечно кто
    куда ли лучше между меня мне много может можно мой моя мы на над надо наконец нас него нее
    ней неё нибудь ним них но ну о об он она они опять от перед по под после потом потому почти
    при про раз разве с сам свою себе себя сегодня сейчас со совсем так такой там тебя тем
    теперь то тогда того тоже только том тот тут ты у уж уже хорошо хоть чего чем через что чтоб
    чтобы чуть эти этого этой этом этот эту я
    """,
    "Spanish": """
    a al algo algunas algunos ante antes como con contra cual cuando de del desde donde durante
    e el ella ellas ellos en entre era erais eran eras eres es esa esas ese eso esos esta estaba
    estabais estaban estabas estad estada estadas estado estados estamos estando estar estaremos
    estará estarán estarás estaré estaréis estaría estaríais estaríamos estarían estarías estas
    este estemos esto estos estoy estuve estuviera estuvierais estuvieran estuvieras estuvieron
    estuviese estuvieseis estuviesen estuvieses estuvimos estuviste estuvisteis estuviéramos
    estuviésemos estuvo está estábamos estáis están estás esté estéis estén estés fue fuera
    fuerais fueran fueras fueron fuese fueseis fuesen fueses fui fuimos fuiste fuisteis fuéramos
    fuésemos ha habida habidas habido habidos habiendo habremos habrá habrán habrás habré
    habréis habría habríais habríamos habrían habrías habéis había habíais habíamos habían
    habías han has hasta hay haya hayamos hayan hayas hayáis he hemos hube hubiera hubierais
    hubieran hubieras hubieron hubiese hubieseis hubiesen hubieses hubimos hubiste hubisteis
    hubiéramos hubiésemos hubo la las le les lo los me mi mis mucho muchos muy más mí mía mías
    mío míos nos nosotras nosotros nuestra nuestras nuestro nuestros o os otra otras otro otros
    para pero poco por porque que quien quienes qué se sea seamos sean seas seremos será serán
    serás seré seréis sería seríais seríamos serían serías seáis sido siendo sobre sois somos
    son soy su sus suya suyas suyo suyos también tanto te tendremos tendrá tendrán tendrás
    tendré tendréis tendría tendríais tendríamos tendrían tendrías tened tenemos tenga tengamos
    tengan tengas tengo tengáis tenida tenidas tenido tenidos teniendo tenéis tenía teníais
    teníamos tenían tenías ti tiene tienen tienes todo todos tu tus tuve tuviera tuvierais
    tuvieran tuvieras tuvieron tuviese tuvieseis tuviesen tuvieses tuvimos tuviste tuvisteis
    tuviéramos tuviésemos tuvo tuya tuyas tuyo tuyos tú un una unos vosotras vosotros vuestra
    vuestras vuestro vuestros y ya yo él éramos
    """,
    "Swedish": """
    alla allt att av blev bli blir blivit de dem den denna deras dess dessa det detta dig din
    dina ditt du där då efter eller en er era ert ett från för ha hade han hans har henne hennes
    hon honom hur här i inom jag ju kan kunde man med mellan men mig min mina mitt mot mycket ni
    nu när någon något några och om oss på samma sedan sig sin sina sitt själv skulle som så
    sådan sådana sådant till under upp ut vad var vara varför varit varje vars vart vem vi vid
    vilka vilkas vilken vilket vår våra vårt än är åt över
    """,
    "Tamil": """
    அங்கு அங்கே அடுத்த அதனால் அதன் அதற்கு அதிக அதில் அது அதே அதை அந்த அந்தக் அந்தப் அல்லது அவன்
    அவரது அவர் அவர்கள் அவள் அவை ஆகிய ஆகியோர் ஆகும் இங்கு இங்கே இதனால் இதனை இதன் இதற்கு இதில் இது
    இதை இந்த இந்தக் இந்தத் இந்தப் இன்னும் இப்போது இருக்கும் இருந்த இருந்தது இருந்து இவர் இவை உன்
    உள்ள உள்ளது உள்ளன எந்த என எனக் எனக்கு எனப்படும் எனவும் எனவே எனினும் எனும் என் என்ன என்னும்
    என்பது என்பதை என்ற என்று என்றும் எல்லாம் ஏன் கொண்ட கொண்டு கொள்ள சற்று சிறு சில சேர்ந்த தனது
    தன் தவிர தான் நான் நாம் நீ பற்றி பற்றிய பல பலரும் பல்வேறு பின் பின்னர் பிற பிறகு பெரும் போது
    போன்ற போல போல் மட்டுமே மட்டும் மற்ற மற்றும் மிக மிகவும் மீது மேலும் மேல் யார் வந்த வந்து
    வரும் வரை வரையில் விட விட்டு வேண்டும் வேறு
    """,
    "Turkish": """
    acaba ama aslında bazı belki biri birkaç birşey biz bu da de defa diye en eğer gibi hem
    hepsi her ile ise için kez ki kim mu mü mı nasıl neden nerde nerede nereye niye niçin o
    sanki siz tüm ve veya ya yani çünkü şey şu
    """,
}

#: The stop words of the ``icu`` and ``icu/split`` tokenizers (whatever the ``language``): what
#: pylance 14 drops of its languages' lists together, with Chinese, Japanese and Korean ones,
#: less words that are meaningful in another language (found as the lists above).
_ICU = """
a aan abban abbia abbiamo abbiano abbiate aber abia about above acaba acea aceasta această
aceea aceeasi acei aceia acel acela acelasi acele acelea acest acesta aceste acestea acestei
acestia acestui aceşti aceştia ad adica af after again against agl agli ahhoz ahogy ahol aia
aibă aici aie aient aies ait aki akik akkor al ala alatt ale alea algo algunas algunos all
alla alle allem allen aller alles allo allt als also alt alta altceva altcineva alte altfel
alti altii altijd altul am ama amely amelyek amelyekben amelyeket amelyet amelynek ami
amikor amit amolyan amíg an anche and anden ander andere anderem anderen anderer anderes
anderm andern anderr anders annak ante antes anume any ao aos apoi aquela aquelas aquele
aqueles aquilo ar are arra arról as asa aslında asta astea astfel asupra at atare atat atata
atatea atatia ati atit atita atitea atitia att atunci até au auch auf aurai auraient aurais
aurait aurez auriez aurions aurons auront aus aux av avaient avais avait avea avec avem
avemmo avendo avesse avessero avessi avessimo aveste avesti avete aveva avevamo avevano
avevate avevi avevo avez aveţi aviez avons avrai avranno avrebbe avrebbero avrei avremmo
avremo avreste avresti avrete avrà avrò avut avuta avute avuti avuto ayant ayez ayons azok
azon azonban azt aztán azután azzal azért aş aţi ba bare bazı be because been before begge
bei being belki below belül ben benne between bij biri birkaç birşey bis bist biz ble blei
blev bli blir blitt blive bliver blivit both bu but by bár både båe c ca can cand care
careia carora caruia catre ce cea ceci ceea cei ceilalti cel cela cele celor celà ces cet
cette ceva che chi chiar ci cind cine cineva cit citeva citiva coi col com come como con
contra contro csak cu cual cuando cui cum cumva cât câte câtva câţi cînd cît cîte cîtva cîţi
că căci cărei căror cărui către da daar daca dacă dagl dagli dai dal dall dalla dalle dallo
damit dan dann dans dar das dasselbe dazu daß de deasupra deci decit defa deg degl degli dei
deim dein deine deinem deinen deiner deines deira deires deja del dela delas dele deles dell
della delle dello dem demselben denn denna denne denselben depois der deras dere derer deres
derselbe derselben des desde desi despre dess dessa desselben dessen det detta dette deze
deşi di dich did dies diese dieselbe dieselben diesem diesen dieser dieses dig dina dintr
dintre dir disse dit ditt diye do doar doch doen does doing donde dort dos dov dove down
drept dupa după durante durch during dus dykk dykkar där då e ea each ebbe ebben ebbero ebbi
ed eddig een eens efter eg egy egyes egyik egyre egyéb ehhez ein eine einem einen einer
eines einig einige einigem einigen einiger einiges einmal eit ekkor el ela elas ele eles
ella ellas elle ellen eller elles ellos elég elő először előtt em emilyen enn ennek entre er
era erais eram eran erano eras eravamo eravate eres eri ero erre ert es esa esas ese eso
esos essa essas esse essendo esses esta estaba estabais estaban estabas estad estada estadas
estado estados estamos estando estar estaremos estará estarán estarás estaré estaréis
estaría estaríais estaríamos estarían estarías estas estava estavam este esteja estejam
estejamos estemos estes esteve estive estivemos estiver estivera estiveram estiverem
estivermos estivesse estivessem estivéramos estivéssemos esto estos estou estoy estuve
estuviera estuvierais estuvieran estuvieras estuvieron estuviese estuvieseis estuviesen
estuvieses estuvimos estuviste estuvisteis estuviéramos estuviésemos estuvo está estábamos
estáis están estás estávamos estão esté estéis estén estés etter että etwas euch eue euer
eues eure eurem euren eurent eurer eures eus eusse eussent eusses eussiez eussions eut eux
ez ezek ezen ezt ezzel ezért eûmes eût eûtes eğer eşti faccia facciamo facciano facciate
faccio facemmo facendo facesse facessero facessi facessimo faceste facesti faceva facevamo
facevano facevate facevi facevo fai fanno farai faranno farebbe farebbero farei faremmo
faremo fareste faresti farete farà farò fata fece fecero feci fel felé few fi fie fiecare
fii fim fiu fiţi foarte foi fomos for fora foram fordi forem formos fosse fossem fossero
fossi fossimo fost foste fosti fra from från fu fue fuera fuerais fueran fueras fueron fuese
fueseis fuesen fueses fui fuimos fuiste fuisteis fummo furent furono further fus fusse
fussent fusses fussiez fussions fut fuéramos fuésemos fôramos fôssemos för før fûmes fûtes
für ge gegen geweest gewesen gibi gli ha haar hab habe haben habida habidas habido habidos
habiendo habremos habrá habrán habrás habré habréis habría habríais habríamos habrían
habrías habéis había habíais habíamos habían habías had hadde hade hai haja hajam hajamos
han hanem hanno hans har has hasta hatte hatten havde have havemos having haya hayamos hayan
hayas hayáis he he'd he'll he's heb hebben heeft hei heidän heidät heihin heille heillä
heiltä heissä heistä heitä hemos hende hendes hennar henne hennes hepsi her here hers
herself het hier hij him himself hin hinter his hiszen hjå ho hogy hogyan hon honom hos hoss
hossen houve houvemos houver houvera houveram houverei houverem houveremos houveria
houveriam houvermos houverá houverão houveríamos houvesse houvessem houvéramos houvéssemos
how hube hubiera hubierais hubieran hubieras hubieron hubiese hubieseis hubiesen hubieses
hubimos hubiste hubisteis hubiéramos hubiésemos hubo hun hur hva hvad hvem hver hvilke
hvilken hvis hvor hvordan hvorfor há hão hän häneen hänelle hänellä häneltä hänen hänessä
hänestä hänet häntä här i i'd i'll i'm i've ia iar ich ici iemand iets if ihm ihn ihnen ihr
ihre ihrem ihren ihrer ihres ii ik il ile illetve ils ilyen ilyenkor im imi in inainte
inapoi inca incit ind indem inni inom ins insa into intr intre io is ise isi ismét ison isso
ist isto it it'd it'll it's iti its itse itself itt için j ja jag je jede jedem jeden jeder
jedes jeg jene jenem jenen jener jenes jer jetzt jo johon joiden joihin joiksi joilla joille
joilta joina joissa joista joita joka joksi jolla jolle jolta jona jonka jos jossa josta
jota jotka ju just já kan kann kanssa keiden keihin keiksi keille keillä keiltä keinä keissä
keistä keitä kell kellett keneen keneksi kenelle kenellä keneltä kenen kenenä kenessä
kenestä kenet keresztül ketkä ketä kez ki kim kon korleis korso koska kuin kuka kun kunde
kunne kunnen kva kvar kvarhelst kven kvi kvifor kívül können könnte között közül l la las le
legalább legyen lehet lehetett lei lenne lenni les lesz lett leur leurs lhe lhes li lo lor
loro los lui lângă lîngă maar maga magát mai mais majd manche manchem manchen mancher
manches mange mas me mea med medan meer meg meget mei meidän meidät meihin meille meillä
meiltä mein meine meinem meinen meiner meines meissä meistä meitä mele mellan mellett mellom
mely melyek mereu mert mes mesmo met meu meus mi mia mich mie miei mig mihin mij mijn mikor
miksi mikä mille millä miltä milyen mina minden mindenki mindent mindig mine minha minhas
minkä mintha minua minulla minulle minulta minun minussa minusta minut minuun minä mio mir
mis missä mistä mit mitkä mitt mitä mivel miért moet moi mon more most mot mu mucho muchos
muito mukaan mult multa multe multi multă mulţi muss musste mutta muy my mycket mykje myself
már más másik még même mí mía mías míg mío míos mü mă mı na naar nach nagyon nas nasıl ned
neden negl negli nei nekem neki nel nell nella nelle nello nerde nerede nereye niiden niihin
niiksi niille niillä niiltä niin niinä niissä niistä niitä niste niye niçin nişte noastre
noastră noch noe noen nog noget nogle noi noiden noihin noiksi noilla noille noilta noin
noina noissa noista noita noka noko nokon nokor nokre nos nosotras nosotros nossa nossas
nosso nossos nostra nostre nostri nostro nostru notre noua nous now noştri nuestra nuestras
nuestro nuestros num numa numai nuo nur nyt näiden näihin näiksi näille näillä näiltä näinä
näissä näistä näitä nämä när nå någon något några når néha néhány nós ob och oder of off og
også ole olemme olen olet olette oli olimme olin olisi olisimme olisin olisit olisitte
olisivat olit olitte olivat olla olleet ollut olyan om omdat on onder only ons ont ook op
opp or ori oricare orice oricine oricum oricând oricât oricînd oricît oriunde os oss other
otra otras otro otros ott ou our ours ourselves out ovat over own pai par para parca pe
pedig pela pelas pelo pelos pentru per perché pero persze peste pic pina più poate poco por
porque pot pour prea prin putini puţin puţina puţină până på pînă qu qual quale quando
quanta quante quanti quanto que quel quella quelle quelles quelli quello quels quem questa
queste questi questo qui quien quienes qué re reeds rá sa sai saját same samma samme sanki
sarai saranno sarebbe sarebbero sarei saremmo saremo sareste saresti sarete sarà sarò sau se
seamos sean sedan seg sehr sein seine seinem seinen seiner seines seja sejam sejamos sekä
selbst selv sen sera serai seraient serais serait seras serei seremos serez seria seriam
seriez serions serons seront será serán serás serão seré seréis sería seríais seríamos
serían serías ses seu seus seáis she she'd she'll she's should should've si sia siamo siano
siate sich sidan siden sido sie siendo siete sig siihen siinä siitä siksi sille sillä siltä
sina sind sint sintem sinua sinulla sinulle sinulta sinun sinussa sinusta sinut sinuun sinä
sitt sitä siz själv sjøl skal skulle slik so sobre soi soient sois soit sok sokat sokkal
solche solchem solchen solcher solches soll sollte som some somme somos somt sondern sono
sonst sont sou soyez soyons spre sta stai stando stanno starai staranno starebbe starebbero
starei staremmo staremo stareste staresti starete starà starò stava stavamo stavano stavate
stavi stavo stemmo stesse stessero stessi stessimo steste stesti stette stettero stetti stia
stiamo stiano stiate sto su sua suas sub such sue sugl sugli sui suis sul sull sulla sulle
sullo sunt suntem sunteţi suo suoi sur sus suya suyas suyo suyos szemben szerint szinte
számára são så sådan sådana sådant sånn só să săi său ta tai talán también também tanto te
tegen tehát teidän teidät teihin teille teillä teiltä teissä teistä teitä tem temos
tendremos tendrá tendrán tendrás tendré tendréis tendría tendríais tendríamos tendrían
tendrías tened tenemos tenga tengamos tengan tengas tengo tengáis tenha tenham tenhamos
tenho tenida tenidas tenido tenidos teniendo tenéis tenía teníais teníamos tenían tenías
terei teremos teria teriam terá terão teríamos tes teu teus teve than that that'll the their
theirs them themselves then there these they they'd they'll they're they've thi this those
through ti tiene tienen tienes til till tine tinha tinham tive tivemos tiver tivera tiveram
tiverem tivermos tivesse tivessem tivéramos tivéssemos to toata toate toată toch tocmai todo
todos toen toi ton too toti totul totusi totuşi tovább továbbá toţi tra tu tua tuas tue tuo
tuohon tuoi tuoksi tuolla tuolle tuolta tuon tuona tuossa tuosta tuota tus tutti tutto
tuturor tuve tuviera tuvierais tuvieran tuvieras tuvieron tuviese tuvieseis tuviesen
tuvieses tuvimos tuviste tuvisteis tuviéramos tuviésemos tuvo tuya tuyas tuyo tuyos tähän
täksi tälle tällä tältä tämä tämän tänä tässä tästä tätä tínhamos több tú tüm tăi tău u ud
ugyanis uit ul ului um uma un una und unde under undeva une unei uneia unele uneori unii
unor unora unos uns unse unsem unsen unser unses unter until unui unuia unul up upp ut után
utána uw v va vaan vad vagy vagyis vagyok vai vaikka valaki valami valamint való vannak vara
varför varit varje vars vart varte ved veel vele vem vere verte very veya vid viel vil vilka
vilkas vilken vilket ville vissza viszont voastre voastră você vocês voi volna volt voltak
voltam voltunk vom von voor vor vore vors vos vosotras vosotros vostra vostre vostri vostro
vostru votre vous vouă voştri vreo vreun vuestra vuestras vuestro vuestros vår våra vårt
være været vært vă waren warst was wat we we'd we'll we're we've weg weil weiter welche
welchem welchen welcher welches wenn werd werde werden were wezen what when where which
while who whom why wie wieder wil will wir wird wirst with wo wollen wollte worden wordt
während würde würden ya yani yli yo you you'd you'll you're you've your yours yourself
yourselves zal ze zelf zich zij zijn zo zou zu zum zur zwar zwischen à às által általában át
än är å åt çünkü è él én éppen éramos és étaient étais était étant étiez étions êtes így îi
îl îmi în îţi össze över úgy újra über ăla ălea ăsta ăstea ăştia ő ők őket şey şi şu ţi ţie
αλλα αν αντι απο αυτα αυτεσ αυτη αυτο αυτοι αυτοσ αυτουσ αυτων αἱ αἳ αἵ αὐτόσ αὐτὸς αὖ γάρ
γα γε για γοῦν γὰρ δέ δή δαί δαὶ δε διά διὰ δὲ δὴ εαν ειμαι ειμαστε ειναι εισαι ειστε εκεινα
εκεινεσ εκεινη εκεινο εκεινοι εκεινοσ εκεινουσ εκεινων ενω επ επι εἰ εἰμί εἰμὶ εἰς εἰσ εἴ
εἴμι εἴτε η θα ισωσ κ καί καίτοι καθ και κατ κατά κατα κατὰ καὶ κι κἀν κἂν μέν μα με μεθ μετ
μετά μετα μετὰ μἐν μὲν μὴν να ο οι ομωσ οπωσ οσο οτι οἱ οἳ οἷς οὓς οὕτω οὕτως οὕτωσ οὖν οὗ
οὗτος οὗτοσ παρ παρά παρα παρὰ περί περὶ ποια ποιεσ ποιο ποιοι ποιοσ ποιουσ ποιων ποτε που
ποῦ προ προσ πρόσ πρὸ πρὸς πως πωσ σε στη στην στο στον σόσ σύ σύν σὸς σὺ σὺν τά τήν τί τίς
τίσ τα ταῖς τε την τησ τι τινα τις τισ το τοί τοι τοιοῦτος τοιοῦτοσ τον τοτε του τούσ τοὺς
τοῖς τοῦ των τό τόν τότε τὰ τὰς τὴν τὸ τὸν τῆς τῆσ τῇ τῶν τῷ ωσ а без более больше будет
будто бы был была были было быть в вам вас вдруг ведь во вот впрочем все всегда всего всех
всю вы где да даже для до другой его ее ей ему если есть еще её ж же за зачем здесь и из или
им иногда их к кажется как какая какой когда конечно кто куда ли лучше между меня мне много
может можно мой моя мы на над надо наконец нас него нее ней неё нибудь ним них но ну о об он
она они опять от перед по под после потом потому почти при про раз разве с сам свою себе
себя сегодня сейчас со совсем так такой там тебя тем теперь то тогда того тоже только том
тот тут ты у уж уже хорошо хоть чего чем через что чтоб чтобы чуть эти этого этой этом этот
эту я ءَ آض آمينَ آناء آنفا آه آها آهاً آهٍ آهِ آي أبدا أبو أبٌ أجل أجمع أخبر أخذ أخو أخٌ
أرى أصبح أصلا أضحى أف أفٍّ أقبل أقل أكثر أل ألا أم أما أمام أمامك أمامكَ أمد أمس أمسى أمّا
أن أنا أنت أنتم أنتما أنتن أنتِ أنشأ أنى أنًّ أنّى أهلا أو أوشك أولئك أولاء أولالك أوه أوّهْ
أى أي أيا أيضا أين أينما أيها أيّ أيّان أُفٍّ إذ إذا إذاً إذما إذن إزاء إلا إلى إليك إليكم
إليكما إليكن إليكنّ إليكَ إلَيْكَ إلّا إما إمّا إن إنا إنما إنه إنَّ إى إي إياك إياكم إياكما
إياكن إيانا إياه إياها إياهم إياهما إياهن إياي إيه إيهٍ ابتدأ اخلولق ارتدّ استحال الآن
الألاء الألى التي الذي الذين اللائي اللاتي اللتان اللتيا اللتين اللذان اللذين اللواتي انبرى
انقلب بؤسا بئس بات بخ بخٍ بسّ بضع بطآن بعد بعدا بعض بغتة بك بكم بكما بكن بل بلى بما بماذا
بمن بنا به بها بهم بهما بهن بي بيد بين بَسْ بَلْهَ تارة تانِ تانِك تبدّل تجاه تحت تحوّل تخذ
تعسا تفعلان تفعلون تفعلين تلقاء تلك تلكم تلكما ته تي تين تينك تَيْنِ تِه تِي ثم ثمة ثمنمئة
ثمَّ ثمّ ثمّة جعل جلل جميع جير حار حاشا حاي حبذا حبيب حتى حجا حدَث حرى حسب حقا حمدا حمو حمٌ
حيث حيثما حين حيَّ حَذارِ خاصة خال خبَّر خلا خلافا خلف دواليك دون دونك ذا ذات ذاك ذان ذانك
ذانِ ذلك ذلكم ذلكما ذلكن ذه ذو ذوا ذواتا ذواتي ذي ذيت ذين ذينك ذَيْنِ ذِه ذِي راح رجع رويدك
ريث رُبَّ زود ساء سبحان سحقا سرا سرعان سمعا سوف سوى شبه شتان شتانَ شرع شمال شَتَّانَ صار
صباح صبرا صدقا صراحة صهٍ صهْ ضحوة طاق طالما طرا طفق طَق ظلّ عاد عامة عجبا عدا عسى عل علق على
عليك عليه علًّ عما عن عند عوض عيانا عَدَسْ غالبا غدا غداة فإذا فإن فرادى فضلا فلان فمن فو
فوق في فيم فيما فيه فيها قاطبة قام قبل قد قطّ قلما كأن كأنما كأنّ كأي كأين كأيّ كأيّن كاد
كان كثيرا كذا كذلك كرب كل كلا كلاهما كلتا كلما كليكما كليهما كلَّا كلّما كم كما كن كى كي كيت
كيف كيفما كِخ لئن لاسيما لبيك لدن لدى لعل لعلَّ لعمر لك لكم لكما لكن لكنما لكنَّ لكي لما
لمّا لنا له لها لهم لهما لهن لو لولا لوما لي ليت مادام ماذا مازال مافتئ متى مثل مذ مرّة مساء
مع معاذ مكانكم مكانكما مكانكنّ مكانَك مما ممن من منذ منه منها مه مهما نا نبَّا نحن نحو نيف
نَخْ نَّ هؤلاء ها هاتان هاته هاتي هاتين هاك هاكَ هاهنا هبّ هذا هذان هذه هذي هذين هكذا هل هلا
هلم هلّا هم هما هن هنا هناك هنالك هو هي هيا هيت هيهات هيّا هَؤلاء هَاتانِ هَاتَيْنِ هَاتِه
هَاتِي هَجْ هَذا هَذانِ هَذَيْنِ هَذِه هَذِي هَيْهات وإذ وإذا وإن وا والذي والذين واهاً
وراءَك ولكن ولو ومن وهو وَيْ وُشْكَانَ يا يفعلان يفعلون يمين அங்கு அங்கே அடுத்த அதனால் அதன்
அதற்கு அதிக அதில் அது அதே அதை அந்த அந்தக் அந்தப் அல்லது அவன் அவரது அவர் அவர்கள் அவள் அவை
ஆகிய ஆகியோர் ஆகும் இங்கு இங்கே இதனால் இதனை இதன் இதற்கு இதில் இது இதை இந்த இந்தக் இந்தத்
இந்தப் இன்னும் இப்போது இருக்கும் இருந்த இருந்தது இருந்து இவர் இவை உன் உள்ள உள்ளது உள்ளன எந்த
என எனக் எனக்கு எனப்படும் எனவும் எனவே எனினும் எனும் என் என்ன என்னும் என்பது என்பதை என்ற என்று
என்றும் எல்லாம் ஏன் கொண்ட கொண்டு கொள்ள சற்று சிறு சில சேர்ந்த தனது தன் தவிர தான் நான் நாம்
நீ பற்றி பற்றிய பல பலரும் பல்வேறு பின் பின்னர் பிற பிறகு பெரும் போது போன்ற போல போல் மட்டுமே
மட்டும் மற்ற மற்றும் மிக மிகவும் மீது மேலும் மேல் யார் வந்த வந்து வரும் வரை வரையில் விட
விட்டு வேண்டும் வேறு ἀλλά ἀλλὰ ἀπ ἀπό ἀπὸ ἀφ ἂν ἃ ἄλλος ἄλλοσ ἄν ἄρα ἅμα ἐάν ἐγώ ἐγὼ ἐκ ἐμόσ
ἐμὸς ἐν ἐξ ἐπί ἐπεὶ ἐπὶ ἐστι ἐφ ἐὰν ἑαυτοῦ ἔτι ἡ ἢ ἣ ἤ ἥ ἧς ἵνα ὁ ὃ ὃν ὃς ὅ ὅδε ὅθεν ὅπερ ὅς
ὅσ ὅστις ὅστισ ὅτε ὅτι ὑμόσ ὑπ ὑπέρ ὑπό ὑπὲρ ὑπὸ ὡς ὡσ ὥς ὥστε ὦ ᾧ あそこ あっ あの ある あれ い いう いる う
え お および か から が き ここ こちら こと この これ これら さ さらに し しかし する せ せる そこ そして その その他 それ それぞれ それで た ただし たち
ため たり だ だれ つ て で です では でも と という といった として とともに とも と共に どこ どの なお ながら など なに なら なり なる なん に において
における について にて によって により による に対して に対する に関する の ので は ば へ ほか ほど ます また または まで も や よう より ら られる れ れる
を 不仅 不但 与 且 为 为了 为什么 乃 么 之 乎 也 了 于 于是 什么 从 他 他们 他的 以 以及 们 但 但是 何 你 你们 你們 你的 俺 倘 兮 关于 其 其中 其他
几 凭 则 到 即 即使 又 及 及び 及其 另 只是 可以 可是 各 向 吗 吧 呀 呢 咋 咱 咱们 哉 哪 哪个 哪些 哪儿 哪里 啊 啥 啦 嗎 嘛 因为 因此 在 她 她们
她的 如 如果 它 它们 它的 对 对于 就 就是 尽管 已经 并 并且 怎 怎么 怎样 您 我 我们 我們 我的 或 或者 所以 把 按 据 既 是 是否 有 某 此 每 焉 然后
然而 由于 的 的话 矣 给 罢了 而 而且 而已 而是 至 若 虽 虽然 被 让 该 谁 貴方 跟 较 过 还是 还有 这 这个 这么 这些 这儿 这样 这种 这里 连 那 那个
那么 那些 那儿 那样 那里 가 가까스로 가령 각 각각 각자 각종 갖고말하자면 같다 같이 개의치않고 거니와 거바 거의 것 것들 게다가 겨우 견지에서 결국 겸사겸사
고려하면 고로 곧 공동으로 과 과연 관계없이 관하여 관한 관해서는 구체적으로 그 그들 그때 그래 그래도 그래서 그러나 그러니 그러니까 그러면 그러므로 그러한즉 그런데
그런즉 그럼 그렇지 그렇지만 그렇지않으면 그리고 그리하여 그만이다 그위에 그저 그중에서 근거로 근거하여 기대여 기점으로 기준으로 기타 까닭으로 까악 까지 까지도 꽈당
끙끙 끼익 나 나머지는 남들 남짓 너 너희 너희들 네 누구 다른 다만 다소 다수 다시말하면 다음 다음에 다음으로 단지 답다 당신 당장 대하면 대하여 대해서 댕그
더구나 더군다나 더라도 더불어 더욱더 더욱이는 동시에 동안 된바에야 된이상 두번째로 둥둥 뒤따라 뒤이어 든간에 들 등 등등 딩동 따라 따라서 따위 딱 때 때문에 또
또한 뚝뚝 령 로 로부터 로써 륙 를 마음대로 마저 마저도 마치 막론하고 만약 만약에 만일 만큼 말하자면 매 매번 메쓰겁다 몇 모 모두 무렵 무릎쓰고 무슨 무엇
무엇때문에 물론 및 바꾸어말하면 바꾸어말하자면 바로 바와같이 반대로 반드시 버금 보는데서 보다더 보드득 본대로 봐 봐라 부터 불구하고 불문하고 붕붕 비걱거리다 비교적
비로소 비록 비하면 뿐만아니라 뿐이다 삐걱 생각한대로 설령 설마 설사 소생 소인 솨 쉿 습니까 습니다 시작하여 시초에 실로 심지어 아 아니나다를가 아니라면 아니면
아니었다면 아래윗 아무거나 아무도 아야 아울러 아이 아이고 아이구 아이야 아이쿠 아하 알았어 앗 앞에서 앞의것 야 약간 양자 어 어기여차 어느 어느것 어느곳 어느때
어느쪽 어느해 어디 어때 어떠한 어떤 어떤것 어떤것들 어떻게 어떻해 어이 어째서 어쨋든 어찌 어찌됏든 어찌됏어 어찌하든지 어찌하여 언제 언젠가 얼마 얼마간 얼마나
얼마든지 얼마만큼 얼마큼 엉엉 에 에게 에서 여 여기 여러분 여보시오 여부 여전히 여차 연이서 영차 옆사람 예 예컨대 예하면 오로지 오자마자 오직 오호 오히려 와
와르르 와아 왜 왜냐하면 외에도 요만큼 요만한걸 요컨대 우르르 우리 우리들 우선 운운 위하여 위해서 윙윙 으로 으로서 으로써 을 응 응당 의 의거하여 의지하여 의해
의해되다 의해서 이 이것 이곳 이때 이라면 이래 이러이러하다 이러한 이런 이럴정도로 이렇게되면 이렇게말하자면 이렇구나 이르기까지 이리하여 이만큼 이번 이봐 이상
이어서 이었다 이와같다면 이외에도 이용하여 이유만으로 이젠 이지만 이쪽 이천구 이천육 이천칠 이천팔 인젠 일것이다 일단 일때 일반적으로 일지라도 입각하여 입장에서
잇따라 있다 자 자기 자기집 자마자 자신 잠깐 잠시 저 저것 저것만큼 저기 저쪽 저희 전부 전자 전후 제 제각기 제외하고 조금 조차 조차도 졸졸 좀 좋아 좍좍
주룩주룩 줄은모른다 중에서 중의하나 즈음하여 즉 즉시 지든지 지만 지말고 진짜로 쪽으로 차라리 참 참나 첫번째로 쳇 총적으로 콸콸 쾅쾅 쿵 탕탕 통하여 툭 퉤 틈타
팍 퍽 펄렁 하 하게될것이다 하게하다 하겠는가 하고있었다 하곤하였다 하구나 하기는한데 하기보다는 하기에 하느니 하는것도 하는바 하더라도 하도다 하도록시키다 하도록하다
하든지 하려고하다 하마터면 하면된다 하면서 하물며 하여금 하여야 하자마자 하지마 하지마라 하지만 하하 한다면 한데 한적이있다 한켠으로는 한항목 할때 할만하다 할망정
할뿐 할수있다 할수있어 할줄알다 할지라도 할지언정 함께 해도된다 해도좋다 해봐요 해야한다 해요 했어요 향하여 향해서 허 허걱 허허 헉 헉헉 헐떡헐떡 혹시 혹은 혼자
훨씬 휘익 휴 흐흐 흥 힘입어
"""

#: pylance 14's ``language`` names (case matters to pylance), each with its stop words.
STOP_WORDS: Dict[str, FrozenSet[str]] = {lang: frozenset(words.split()) for lang, words in _LISTS.items()}

#: The ``icu`` tokenizers' stop words.
ICU_STOP_WORDS: FrozenSet[str] = frozenset(_ICU.split())


def canonical_language(name: Any) -> str:
    """pylance's spelling of the ``language`` `name` (matched without regard to case: pylance
    itself takes only its own spelling, which is what an index's ``params`` must hold for
    pylance to read it). Raises ``InvalidArgumentError`` for a language pylance does not
    know."""
    if isinstance(name, str):
        for lang in STOP_WORDS:
            if lang.lower() == name.lower():
                return lang
    raise InvalidArgumentError(f"unknown language {name!r}: pylance's languages are {', '.join(STOP_WORDS)}")
